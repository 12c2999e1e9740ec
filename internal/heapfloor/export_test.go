package heapfloor

// OnTune makes the running tuner send each percent it sets (or keeps) to
// ch when ch has room; it returns the function that undoes it.
func OnTune(ch chan<- int) (undo func()) {
	f := func(p int) {
		select {
		case ch <- p:
		default:
		}
	}
	tuned.Store(&f)
	return func() { tuned.Store(nil) }
}
