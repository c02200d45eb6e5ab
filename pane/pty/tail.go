package pty

// Tail holds the newest bytes the child wrote, once Run has returned: what
// an agent printed as it exited.
type Tail struct {
	// Size is how many of the newest bytes to keep.
	Size int
	data []byte
}

// Bytes returns the kept output. It is empty until Run has returned.
func (t *Tail) Bytes() []byte { return t.data }

// readBuffers are the copy loop's read buffers when a Tail is wanted. The
// loop reads into two buffers in turn, so its last two reads stay where
// they were read and the tail costs no copy of the output: when a buffer
// is about to be read into again, only what of the read it holds can
// still be among the newest Size bytes — Size minus the newer read — is
// kept aside. Under a flood every read is about Size bytes (a pty's
// line buffer is 4 KiB) and that is a few bytes a read; copying every read
// into a ring was one more copy of every byte of output.
type readBuffers struct {
	bufs      [2][]byte
	next      int    // the buffer the next read goes into
	cur, prev []byte // the last read, and the one before it
	older     []byte // the newest bytes before prev, at most size
	size      int
}

func newReadBuffers(chunk, size int) *readBuffers {
	return &readBuffers{
		bufs:  [2][]byte{make([]byte, chunk), make([]byte, chunk)},
		older: make([]byte, 0, size),
		size:  size,
	}
}

// take returns the buffer to read into next. The read it held is folded
// into older first.
func (r *readBuffers) take() []byte {
	if r.prev != nil {
		r.older = keepLast(r.older, r.prev, r.size-len(r.cur))
		r.prev = nil
	}
	return r.bufs[r.next]
}

// got records that n bytes were read into the buffer take returned.
func (r *readBuffers) got(n int) {
	if n <= 0 {
		return
	}
	r.prev, r.cur = r.cur, r.bufs[r.next][:n]
	r.next ^= 1
}

// tail returns a copy of the newest size bytes read.
func (r *readBuffers) tail() []byte {
	out := keepLast(append([]byte(nil), r.older...), r.prev, r.size)
	return keepLast(out, r.cur, r.size)
}

// keepLast returns the last n bytes of dst followed by p, in dst's memory
// (dst's capacity must be at least n; nothing is allocated then).
func keepLast(dst, p []byte, n int) []byte {
	if n <= 0 {
		return dst[:0]
	}
	if len(p) >= n {
		return append(dst[:0], p[len(p)-n:]...)
	}
	if keep := n - len(p); len(dst) > keep {
		dst = dst[:copy(dst, dst[len(dst)-keep:])]
	}
	return append(dst, p...)
}
