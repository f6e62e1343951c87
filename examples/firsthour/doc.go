// Package firsthour holds, as tests, the three programs a new user wrote
// in a first hour with podstart (issue 28), as they are written now: a
// unit test of pod start (unittest_test.go), an operator computing
// credentials and CRI configs (operator_test.go) and a podworker loop
// (loop_test.go). README.md sets them beside the versions the same user
// had to write before, with line counts.
package firsthour
