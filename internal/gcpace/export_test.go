package gcpace

// OnPace makes the running pacer send each percent it sets (or keeps) to
// ch when ch has room; it returns the function that undoes it.
func OnPace(ch chan<- int) (undo func()) {
	f := func(p int) {
		select {
		case ch <- p:
		default:
		}
	}
	paced.Store(&f)
	return func() { paced.Store(nil) }
}
