// Package causality holds the rules that make eddy's causal chains
// finite: the depth of a delivery and of the rows it authors, the depth
// cap and what happens past it, the engine park and fire rows, the cause
// tokens a webhook function writes back with, and the walk from any row to
// the root of its chain.
//
// # Depth and the cap
//
// An API write has depth 0 and no cause. A delivery caused by row R runs
// at Next(R) = depth(R)+1, and every row it authors records causedBy =
// R.seq (always smaller than its own seq) and that depth. A delivery whose
// depth would exceed the cap (DefaultCap per space; a trigger may set a
// lower one) is parked instead of run: Decide answers Run, Park or
// ParkQuietly, and the executor calls it once per delivery it creates:
//
//	switch causality.Decide(cause, spaceCap, trig.CausalityCap) {
//	case causality.Run:
//		// create the delivery at depth Next(cause)
//	case causality.Park:
//		// create it parked and, in the same write, append the engine
//		// row causality.NewPark(d) (changelog.WriteRequest.Engine)
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
