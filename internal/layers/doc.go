// Package layers holds the test that keeps the import layering of the project's packages one-way.
package layers
