// Package causality holds the rules that make eddy's causal chains
// finite and small: the depth of a delivery and of the rows it authors,
// the depth cap, the causal budget and what happens past them, the engine
// park and fire rows, the cause tokens a webhook function writes back
// with, and the walk from any row to the root of its chain.
//
// # Depth and the cap
//
// An API write has depth 0 and no cause. A delivery caused by row R runs
// at Next(R) = depth(R)+1, and every row it authors records causedBy =
// R.seq (always smaller than its own seq), root = the seq of the chain's
// root write (RootOf) and that depth. A delivery whose depth would exceed
// the cap (DefaultCap per space; a trigger may set a lower one) is parked
// instead of run. Decide answers Run, Park or ParkQuietly, and the
// executor calls it once per delivery it creates:
//
//	v := causality.Decide(cause, limits, spent[cause.RootSeq()])
//	switch v.Decision {
//	case causality.Run:
//		// create the delivery at depth Next(cause)
//	case causality.Park:
//		// create it parked (lastError v.Reason()) and, in the same
//		// write, append the engine row causality.NewPark(d, v)
//		// (changelog.WriteRequest.Engine)
//	case causality.ParkQuietly:
//		// create it parked; append nothing
//	}
//
// A park row carries the parked delivery's depth, which is past the cap,
// so any delivery a park row causes is itself past the cap; when the cause
// of a delivery past the cap is a park row, Decide answers ParkQuietly, so
// a park never causes another park row. (A trigger with a lower cap parks
// shallower; a park row at depth 3 may still run a trigger whose cap is
// 16, but its chain then ends at that cap like any other.) Since depth
// grows by one at every link and every stored row is at most one past the
// cap, a chain holds at most DefaultCap+2 rows: causality terminates.
//
// # The causal budget
//
// The cap bounds depth, not breadth: a function writing three rows per
// run would allow 3^16 rows within it. So a root write may cause at most
// DefaultBudget rows in all (a trigger may set a lower budget): the store
// counts every delivery-authored row against its root in the transaction
// that writes it (store.RootCountTx), and Decide, given the root's count
// (Spent), parks a delivery once the root has caused the budget in force.
// Only a root's first budget park writes a park row (the engine marks the
// root parked in the same transaction); later ones, and deliveries caused
// by a park row, park quietly. A released delivery runs anyway: its rows
// count, and what they cause parks quietly.
//
// # Cause tokens
//
// A webhook function may write back through the API with the header
// Eddy-Cause: <token> from its delivery. The token is minted by Mint
// (base64url JSON claims "." base64url HMAC-SHA256) with the key Key
// stores once per database, and checked by Verify. Writes made with it are
// delivery-authored: Claims.Provenance is their provenance template.
//
// # Chains
//
// Walk follows provenance.causedBy from a row to its root (depth 0). A
// link below the horizon ends the chain with a pruned marker instead of
// failing; a chain that breaks the rules (a cause that is not strictly
// smaller, a chain longer than the bound) is a *MalformedError. Descend
// walks up to the root and back down: the whole tree of the rows the root
// caused, level by level, with the deliveries between them. A cause is
// always a smaller seq, so the descent ends.
package causality
