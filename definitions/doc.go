// Package definitions manages a space's saved functions and triggers: it
// validates them when they are saved (through runtime.ParseFunction and
// triggers.ParseTrigger), checks what a single definition cannot check
// alone (a trigger's function exists, a function still used by a trigger
// is not deleted), reports cycles in the trigger graph as warnings, and
// dry-runs a function on a committed row.
//
// It stores definitions through store.Store in their canonical JSON and
// runs nothing: evaluating triggers and delivering to functions is built
// elsewhere on top of the same stored definitions.
//
// # Consistency
//
// Definition writes are serialized inside one Service, so within one
// process a trigger cannot be saved for a function that is being deleted.
// Processes sharing a database do not coordinate: a trigger saved in one
// process while another deletes its function can be left naming a missing
// function. Whatever runs triggers must treat a missing function as a
// failed delivery, not as a crash.
//
// # The trigger graph
//
// Saving a trigger builds the graph of every trigger of the space (the
// saved one replacing its old version) from the types each function
// declares in writes, and reports each cycle through the saved trigger as
// a triggers.Warning (see triggers.Feeds for the edge rule). A function
// that declares no writes is taken to write nothing, so cycles through it
// go unreported.
package definitions
