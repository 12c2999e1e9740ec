// Package todo holds the todo example: eddy.yaml (a task type, an expr
// function, two webhooks and three triggers), the webhook receiver in
// ./receiver, a README walk-through, and an end-to-end test that runs the
// example against eddy in process. It has no code of its own.
package todo
