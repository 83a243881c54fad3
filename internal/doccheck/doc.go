// Package doccheck holds one test: that the Go code in README.md and
// docs/*.md names only what the library's packages export (functions,
// types, variables, constants, the fields of the configuration structs
// and the methods called on them), so that a renamed API breaks the test
// instead of the documentation. The examples the documents show run as
// Example functions beside the packages (rebuild, syncfilter); this keeps
// their text honest between those runs.
package doccheck
