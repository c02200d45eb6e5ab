package pty

import (
	"bytes"
	"errors"
	"sync"
	"unicode/utf8"
)

// Injector lets other parts of herdr-pi write to the caller's terminal (a
// desktop-notification sequence, say) without tearing the child's output:
// the copy loop itself writes injected bytes, between output chunks that end
// outside any escape sequence or UTF-8 character. Write never blocks.
type Injector struct {
	mu      sync.Mutex
	pending [][]byte
	size    int
	wake    func()
}

// injectLimit bounds what may wait for a clean boundary; notifications are
// tiny, so hitting it means nothing is draining the queue.
const injectLimit = 64 << 10

// ErrInjectFull means the injector's queue is full.
var ErrInjectFull = errors.New("terminal injection queue is full")

// NewInjector returns an Injector to pass in [Options].Inject.
func NewInjector() *Injector { return &Injector{} }

// Write queues a copy of p for the terminal. It may be called from any
// goroutine, before, during and after a Run: bytes queued while no Run
// serves the terminal go out once one does.
func (j *Injector) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	j.mu.Lock()
	if j.size+len(p) > injectLimit {
		j.mu.Unlock()
		return 0, ErrInjectFull
	}
	j.pending = append(j.pending, bytes.Clone(p))
	j.size += len(p)
	wake := j.wake
	j.mu.Unlock()
	// Outside the lock: the copy loop takes it to collect the bytes. The
	// wake-up may belong to a Run that has just ended; the loop's waker
	// makes that harmless.
	if wake != nil {
		wake()
	}
	return len(p), nil
}

// setWake connects the injector to a Run's copy loop (nil disconnects it).
// Bytes already queued wake the new loop at once.
func (j *Injector) setWake(f func()) {
	j.mu.Lock()
	j.wake = f
	pending := len(j.pending) > 0
	j.mu.Unlock()
	if f != nil && pending {
		f()
	}
}

func (j *Injector) take() [][]byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	p := j.pending
	j.pending, j.size = nil, 0
	return p
}

func (j *Injector) hasPending() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending) > 0
}

// Boundary tracks, cheaply enough for the copy loop, whether the output so
// far ends outside an escape sequence and a UTF-8 character — where a
// terminal's parser is back in its ground state. It looks only at the text
// from the last ESC of each chunk (found by vector search, lastESC), so it
// costs nanoseconds per chunk rather than per byte. When unsure it says
// "not clean", which only delays an injection (and keeps the shadow screen
// from clearing itself for a flood: screen.Screen).
//
// A doubled ESC is taken as "inside tmux's passthrough": an agent in tmux
// wraps a sequence meant for the terminal outside as ESC P tmux; … ESC \
// with every ESC of it doubled, and tmux reads the whole as one DCS that
// only an ESC \ after a single ESC ends. A terminal's parser would call
// the wrapped sequence's own end ground, but bytes injected there land
// in tmux's passthrough. Outside tmux a doubled ESC means nothing, so
// calling it unfinished costs at most a short delay.
type Boundary struct {
	clean bool
	// endsESC: the last chunk ended with ESC, which doubles an ESC that
	// starts the next one.
	endsESC bool
}

// NewBoundary starts at a clean boundary: nothing was output yet.
func NewBoundary() Boundary { return Boundary{clean: true} }

// Clean reports whether the output observed so far ends at a clean boundary.
func (b *Boundary) Clean() bool { return b.clean }

// Observe takes the next chunk of output. It returns where in p the last
// ESC is (-1 for none), found on the way, for callers that look after it.
func (b *Boundary) Observe(p []byte) (lastESCAt int) {
	if len(p) == 0 {
		return -1
	}
	i := lastESC(p)
	if i >= 0 {
		doubled := b.endsESC
		if i > 0 {
			doubled = p[i-1] == 0x1b
		}
		b.clean = !doubled && sequenceComplete(p[i:])
	}
	b.endsESC = p[len(p)-1] == 0x1b
	// No ESC in this chunk: the state carries over from the last one,
	// except that a string sequence (OSC) may have ended with BEL.
	if b.clean {
		b.clean = utf8Complete(p)
	}
	return i
}

// lastESC is bytes.LastIndexByte(p, ESC) without its byte-by-byte walk
// (measured: 1.3% of all CPU under a flood of plain text, which has no ESC
// to stop it). An ESC, when there is one, is usually near the end of a
// chunk: the last 64 bytes are walked back, and the text before them is
// searched in windows that grow fourfold towards the front, each forward
// with IndexByte's vector search, ESC to ESC. One window for the whole
// rest cost an IndexByte call per ESC in it when the ESCs are dense but
// none fell in the last 64 bytes (random bytes with escapes: a tenth of
// the wrapper's user time under such a flood; BenchmarkLastESC).
func lastESC(p []byte) int {
	const tail = 64
	lo := max(len(p)-tail, 0)
	if i := bytes.LastIndexByte(p[lo:], 0x1b); i >= 0 {
		return lo + i
	}
	for w := 4 * tail; lo > 0; w *= 4 {
		hi := lo
		lo = max(hi-w, 0)
		win, last := p[lo:hi], -1
		for {
			i := bytes.IndexByte(win[last+1:], 0x1b)
			if i < 0 {
				break
			}
			last += 1 + i
		}
		if last >= 0 {
			return lo + last
		}
	}
	return -1
}

// sequenceComplete reports whether the escape sequence that starts s (with
// no later ESC in s) is finished. A C0 control inside a sequence is carried
// out without ending it — ESC BS 7 is still DECSC — except CAN and SUB,
// which cancel it (ECMA-48; what xterm and x/vt's parser do). DEL right
// after the ESC is ignored the same way: ESC DEL 7 is DECSC too.
func sequenceComplete(s []byte) bool {
	k := 1
	for k < len(s) && (s[k] < 0x20 || s[k] == 0x7f) {
		if cancels(s[k]) {
			return true
		}
		k++
	}
	if k >= len(s) {
		return false
	}
	c, rest := s[k], s[k+1:]
	ends := func(final func(byte) bool) bool {
		for _, b := range rest {
			if cancels(b) || final(b) {
				return true
			}
		}
		return false
	}
	switch {
	case c == '\\': // ST: ends a string sequence
		return true
	case c == '[': // CSI: parameters, intermediates, then a final byte
		return ends(func(b byte) bool { return b >= 0x40 && b <= 0x7e })
	case c == ']': // OSC: ended by BEL here (ST would be a later ESC)
		return ends(func(b byte) bool { return b == 0x07 })
	case c == 'P' || c == 'X' || c == '^' || c == '_': // DCS, SOS, PM, APC need ST
		return ends(func(byte) bool { return false })
	case c >= 0x20 && c <= 0x2f: // ESC with intermediates, e.g. ESC ( B
		return ends(func(b byte) bool { return b >= 0x30 && b <= 0x7e })
	default: // two-byte escape
		return true
	}
}

// cancels reports whether b (CAN, SUB) cancels a sequence in progress.
func cancels(b byte) bool { return b == 0x18 || b == 0x1a }

// utf8Complete reports whether p does not end inside a multi-byte character.
func utf8Complete(p []byte) bool {
	start := max(len(p)-utf8.UTFMax, 0)
	for i := len(p) - 1; i >= start; i-- {
		c := p[i]
		if c < 0x80 {
			return true
		}
		if c >= 0xc0 { // a leading byte: is its character whole?
			return utf8.FullRune(p[i:])
		}
	}
	return true
}
