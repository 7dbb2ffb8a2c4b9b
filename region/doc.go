// Package region decides one limit across regions locally, with a bounded over-admission.
package region
