package pty

// Tail holds the newest bytes the child wrote, once Run has returned: what
// an agent printed as it exited.
type Tail struct {
	// Size is how many of the newest bytes to keep, at most 60 KiB (the
	// tap keeps the chunk it filled before the current one: Tap.Last).
	Size int
	data []byte
}

// Bytes returns the kept output. It is empty until Run has returned.
func (t *Tail) Bytes() []byte { return t.data }
