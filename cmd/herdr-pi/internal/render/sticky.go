package render

import "io"

// StickyWriter keeps the first write error of the writer it wraps, for
// output whose writers drop errors (urfave/cli's help, a long run of
// lines): the command still fails when its output never arrived.
type StickyWriter struct {
	W   io.Writer
	Err error
}

func (s *StickyWriter) Write(p []byte) (int, error) {
	n, err := s.W.Write(p)
	if err != nil && s.Err == nil {
		s.Err = err
	}
	return n, err
}
