// Package integrations runs the Node and Python integration packages' tests against an rlstore built from this checkout.
package integrations
