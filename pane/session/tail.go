package session

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// maxLine bounds one session line kept while waiting for its newline; a
// longer line (a huge pasted image, say) is skipped, as Pi would skip a
// line it cannot parse.
const maxLine = 32 << 20

// firstWindow is how much of a long file's end the first read takes: the
// sentinel and retry rules look at the last entries of the branch, and a
// long session's file (hundreds of megabytes of tool results) took seconds
// to read whole. What the window leaves out is read only when the rules
// would walk into it (see tail.readBack).
const firstWindow = 1 << 20

// tail follows one session file: it reads what was appended since the last
// poll, starts over when the file was replaced or truncated, and keeps an
// unfinished last line until its newline arrives.
type tail struct {
	path string
	// since is when the watcher began to look at path. What the first read
	// finds in a file last written before then is the past: an earlier
	// Pi's runs, all over (see Tree.Watching).
	since   time.Time
	seen    bool // the file was opened once
	tree    *Tree
	file    os.FileInfo // identity of the file read so far
	offset  int64
	partial []byte
	skip    bool // inside an over-long line, until its newline
	Skipped int  // unparsable lines so far
	pin     *pin // the leaf pinned (nil: none), kept for a tree read anew
	// window is firstWindow but in tests. head is how many bytes at the
	// file's start the first read left out (0: none, or read since);
	// firstEnd is where the first read ended, and firstWatching whether
	// the tree took its entries as written (Tree.Watching) already.
	window        int64
	head          int64
	firstEnd      int64
	firstWatching bool
	// firstPin is the pin the first read was made under; repinned says
	// one was set (or dropped) since, which put the leaf where it says.
	firstPin *pin
	repinned bool
	// refused is the path's last refusal as something other than a
	// regular file, said once: every tick would say it again.
	refused string
}

// setPin pins the tree's leaf (nil: back to the file's last line).
func (t *tail) setPin(p *pin) {
	t.pin = p
	t.repinned = t.seen
	if p == nil {
		t.tree.Unpin()
		return
	}
	t.tree.Pin(p.leaf, p.follow)
}

func newTail(path string, since time.Time) *tail {
	return &tail{path: path, since: since, tree: NewTree(), window: firstWindow}
}

// poll reads new lines. It reports whether the tree changed; a missing
// file is not an error (Pi writes lazily).
func (t *tail) poll() (changed bool, err error) {
	f, fi, err := openRegular(t.path)
	var odd *notRegularError
	if errors.As(err, &odd) {
		if err.Error() == t.refused {
			return false, nil
		}
		t.refused = err.Error()
		return false, err
	}
	t.refused = ""
	if errors.Is(err, fs.ErrNotExist) {
		if t.file != nil { // the file went away: forget it
			t.reset()
			return true, nil
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if t.file != nil && (!os.SameFile(t.file, fi) || fi.Size() < t.offset) {
		t.reset()
		changed = true
	}
	t.file = fi
	if !t.seen {
		t.seen = true
		// The first read of a file written before we looked restores it;
		// everything after, and all of a file written since, is read as Pi
		// writes it.
		if !fi.ModTime().Before(t.since.Add(-mtimeSlack)) {
			t.tree.Watching()
			t.firstWatching = true
		}
		t.firstPin = t.pin
		if t.window > 0 && t.offset == 0 && fi.Size() > t.window {
			// Only the end, from the first line that begins in it: the
			// byte before the window is read too, so that a window that
			// begins with a line keeps it whole.
			t.head = fi.Size() - t.window
			t.offset, t.skip = t.head-1, true
		}
		defer func() {
			t.tree.Watching()
			t.firstEnd = t.offset
		}()
	}
	if fi.Size() == t.offset {
		return changed, nil
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return changed, err
	}
	buf := make([]byte, 64<<10)
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			t.offset += int64(n)
			if t.feed(buf[:n]) {
				changed = true
			}
			t.reserve(f, t.offset, fi.Size(), buf)
		}
		if rerr == io.EOF {
			return changed, nil
		}
		if rerr != nil {
			return changed, rerr
		}
	}
}

// readBack reads more of the file's start, which the first read left out,
// when what the sentinel and retry rules say could depend on it: the
// branch, walked back from the leaf, reaches an entry not read before a
// user or assistant message decides (a /tree back to an old entry, a line
// longer than the window), or the window held no entry. Each try reads
// from twice as far back as the last, so a session of hundreds of
// megabytes costs at most twice what the rules need, in time and in
// entries held, not the whole file. The tree is then what reading from
// there as it was read would have made: the first read's lines as the
// first read took them, the later ones as written, and the leaf the pin
// moved to; from the file's start, what reading it whole would have made.
// It says whether it read.
func (t *tail) readBack() (bool, error) {
	if t.head == 0 || t.tree.decidedWithin() {
		return false, nil
	}
	f, fi, err := openRegular(t.path)
	var odd *notRegularError
	if errors.As(err, &odd) {
		return false, nil // replaced by a pipe or the like: poll said so
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if t.file == nil || !os.SameFile(t.file, fi) {
		return false, nil // replaced: the next poll reads it anew
	}
	for start := t.head; ; {
		start = max(0, t.firstEnd-2*(t.firstEnd-start))
		wider, err := t.readFrom(f, start)
		if err != nil {
			return false, err
		}
		if start == 0 || wider.tree.decidedWithin() {
			t.tree, t.partial, t.skip, t.Skipped, t.head = wider.tree, wider.partial, wider.skip, wider.Skipped, start
			return true, nil
		}
	}
}

// readFrom reads f anew from start (0, or where a line may begin: as in
// the first read, the line that begins there is kept whole) to where t has
// read, into a tail of its own.
func (t *tail) readFrom(f *os.File, start int64) (*tail, error) {
	wider := &tail{tree: NewTree()}
	if p := t.firstPin; p != nil && !t.repinned {
		// Pinned before the first read and not since: the leaf moves on
		// through the lines the window left out, as it would have.
		wider.tree.Pin(p.leaf, p.follow)
	}
	if t.firstWatching {
		wider.tree.Watching()
	}
	from := start
	if start > 0 {
		from, wider.skip = start-1, true
	}
	if err := wider.feedFrom(f, from, t.firstEnd); err != nil {
		return nil, err
	}
	wider.tree.Watching()
	if err := wider.feedFrom(f, t.firstEnd, t.offset); err != nil {
		return nil, err
	}
	if old := t.tree; old.pinned && t.repinned {
		wider.tree.pinned, wider.tree.follow, wider.tree.leaf = true, old.follow, old.leaf
	}
	return wider, nil
}

// feedFrom feeds the bytes of f from start to end.
func (t *tail) feedFrom(f *os.File, start, end int64) error {
	r := io.NewSectionReader(f, start, end-start)
	buf := make([]byte, 64<<10)
	for at := start; ; {
		n, err := r.Read(buf)
		t.feed(buf[:n])
		at += int64(n)
		t.reserve(f, at, end, buf)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// reserve makes room in the unfinished line for the rest of it, once it
// is longer than a read: it looks ahead in f from off (up to end) for the
// newline, so that a line of megabytes (a tool's output) is held in one
// buffer of its size. Grown by append a read at a time, it cost five
// times its size. buf is scratch space.
func (t *tail) reserve(f io.ReaderAt, off, end int64, buf []byte) {
	have := len(t.partial)
	if t.skip || have < len(buf) || cap(t.partial)-have >= len(buf) {
		return
	}
	rest := end - off // the line's rest: all the file has, unless a newline comes first
	for at := off; at < end && at-off <= maxLine; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-at)], at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			rest = at - off + int64(i) + 1
			break
		}
		if err != nil || n == 0 {
			break
		}
		at += int64(n)
	}
	rest = min(rest, maxLine+1-int64(have))
	if rest > int64(cap(t.partial)-have) {
		// At least doubled: a line still being written, a little more
		// each poll, is then copied a bounded number of times.
		grown := make([]byte, have, max(int64(have)+rest, min(int64(2*cap(t.partial)), maxLine+1)))
		copy(grown, t.partial)
		t.partial = grown
	}
}

// reset forgets what was read: the file went away, was replaced or cut
// short while we watched, so what it holds next is read as written.
func (t *tail) reset() {
	t.tree = NewTree()
	t.tree.Watching()
	if t.pin != nil {
		t.tree.Pin(t.pin.leaf, t.pin.follow)
	}
	t.file = nil
	t.offset = 0
	t.partial = nil
	t.skip = false
	t.head = 0
}

// feed splits data into lines and adds the parsable ones.
func (t *tail) feed(data []byte) (changed bool) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !t.skip {
				t.partial = append(t.partial, data...)
				if len(t.partial) > maxLine {
					t.partial, t.skip = nil, true
					t.Skipped++
				}
			}
			return changed
		}
		chunk := data[:i]
		data = data[i+1:]
		if t.skip {
			t.skip = false
			continue
		}
		line := chunk
		if len(t.partial) > 0 {
			line = append(t.partial, chunk...)
			t.partial = nil
		}
		e, err := ParseLine(line)
		if err != nil {
			if len(bytes.TrimSpace(line)) > 0 {
				t.Skipped++
			}
			continue
		}
		t.tree.Add(e)
		changed = true
	}
	return changed
}
