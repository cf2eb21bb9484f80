// Package layers holds the test that keeps the project's dependency order:
// every package sits in one layer, and no package imports a package of a
// higher layer or a test-support package (docs/architecture.md).
package layers
