package views

// feeds holds the live view stream feeds of a Service, one per space.
type feeds struct{ s *Service }

func (f *feeds) init(s *Service) { f.s = s }

// changed tells the feeds of space that its views, types or epoch may
// have changed.
func (f *feeds) changed(space string) {}
