// Package board is where the wrappers of one person leave the questions
// Herdr has not shown yet, and the runs whose end it has not shown, so
// that the toast Herdr does show names them all. Herdr shows one toast a second for every pane together
// (herdr-socket-api.md §4.6): thirty panes that ask at once would wait
// half a minute for their own toasts, and lose them when the wrapper's
// retries run out. The board is one small file per waiting question in a
// private directory; every change is one create, rename or remove, so no
// wrapper ever waits on another. A wrapper's files count only while it
// holds the lock on its presence file, which the kernel drops when it
// dies. It does not decide what a toast says
// (notify does) and never talks to Herdr.
package board

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// leftoverAfter is how old a half-made file (.tmp, .making) may be before
// it is taken for the leftover of a wrapper killed while writing it: its
// making takes microseconds.
const leftoverAfter = 2 * time.Minute

// nameLimit caps what is read of one entry: a place is a short name.
const nameLimit = 512

const (
	heldExt = ".held"
	toldExt = ".told"
	// A run's end has a name of its own: a wrapper of a build from before
	// these reads every .held file as a question.
	doneExt   = ".done"
	failedExt = ".failed"
)

// Kind is what an entry on the board tells of.
type Kind uint8

// The kinds of entry.
const (
	// Asking: the pane's agent waits for the person.
	Asking Kind = iota
	// Finished: the pane's agent finished a run.
	Finished
	// Failed: the pane's run stopped with an error.
	Failed
)

// kindExts are the file extensions of the kinds, in Kind order.
var kindExts = [...]string{Asking: heldExt, Finished: doneExt, Failed: failedExt}

// kindOf is the kind of an entry file's extension.
func kindOf(ext string) (Kind, bool) {
	for k, e := range kindExts {
		if e == ext {
			return Kind(k), true
		}
	}
	return 0, false
}

// Board is one wrapper's view of the shared directory.
type Board struct {
	dir string
	// pane names this wrapper's pane; self is pane and the process id,
	// which keeps nested wrappers of one pane apart.
	pane, self string
	n          atomic.Uint64
	// here is this wrapper's presence file, locked while it runs.
	here *os.File
	// joining, when set, runs between making the directory and making the
	// presence file in it: tests let another wrapper leave there.
	joining func()
}

// makeDir makes the board's directory when missing and checks it is one.
// A directory found and then gone was removed by the last wrapper leaving
// it: it is made again.
func makeDir(dir string) error {
	for tries := 1; ; tries++ {
		if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
			return err
		}
		fi, err := os.Lstat(dir)
		if os.IsNotExist(err) && tries < joinTries {
			continue
		}
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("toast board %s is not a directory", dir)
		}
		return nil
	}
}

const hereExt = ".here"

// Held is another wrapper's entry on the board: its name, the name of the
// place it comes from (a pane's label, or its project), and what it tells.
type Held struct {
	Entry, Place string
	Kind         Kind
}

// Open returns the board of the wrapper known as instance (its Herdr pane
// id) among the wrappers of the Herdr at herdrSocket: a directory of its
// own under base (made 0700 when missing, removed by the last wrapper to
// leave; base must be private already).
// A toast in one Herdr never names the panes of another, which the person
// may not be looking at.
func Open(base, herdrSocket, instance string) (*Board, error) {
	at := sha256.Sum256([]byte(herdrSocket))
	dir := filepath.Join(base, hex.EncodeToString(at[:8]))
	if err := makeDir(dir); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(instance))
	pane := hex.EncodeToString(sum[:6]) + "."
	// The pid and the start time: a later wrapper of the pane that got a
	// killed one's pid back never takes over its files.
	self := pane + strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(time.Now().UnixNano(), 36)
	return &Board{dir: dir, pane: pane, self: self}, nil
}

// Hold puts a question from place on the board and returns its entry; the
// caller drops it once told. Only a wrapper [Board.Present] holds: others
// name its questions while it runs and no longer (it returns "" before).
func (b *Board) Hold(place string) string {
	return b.HoldNews(Asking, place)
}

// HoldNews is Hold for an entry of any kind: a run's end Herdr has not
// shown is named by others' toasts as a question is, after the questions.
func (b *Board) HoldNews(kind Kind, place string) string {
	if b.here == nil || int(kind) >= len(kindExts) {
		return ""
	}
	entry := b.self + "-" + strconv.FormatUint(b.n.Add(1), 10)
	tmp := filepath.Join(b.dir, "."+entry+".tmp")
	if err := os.WriteFile(tmp, []byte(place), 0o600); err != nil {
		_ = os.Remove(tmp)
		return ""
	}
	if err := os.Rename(tmp, filepath.Join(b.dir, entry+kindExts[kind])); err != nil {
		_ = os.Remove(tmp)
		return ""
	}
	return entry
}

// Others are the entries the other wrappers hold, oldest first, of every
// kind. The files of wrappers that are gone are removed on the way.
func (b *Board) Others() []Held {
	type aged struct {
		Held
		at time.Time
	}
	var out []aged
	for _, f := range b.look() {
		kind, ok := kindOf(f.ext)
		if !ok || f.owner == b.self {
			continue
		}
		place, ok := readPlace(filepath.Join(b.dir, f.name))
		if !ok {
			continue
		}
		out = append(out, aged{Held{Entry: strings.TrimSuffix(f.name, f.ext), Place: place, Kind: kind}, f.at})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	held := make([]Held, len(out))
	for i, a := range out {
		held[i] = a.Held
	}
	return held
}

// file is one file of the board whose wrapper runs.
type file struct {
	name, ext string
	// owner is the wrapper (its self) the file belongs to.
	owner string
	at    time.Time
}

// look lists the board's entries and presences whose wrappers still run,
// and removes the others: a question or a presence is on the board only
// while its wrapper holds the lock on its presence file, so one killed
// (SIGKILL, a crash: no code of its own ran) is gone from the next look
// on, and the directory holds no more files than wrappers that run, two
// each. Half-made files are removed once old.
func (b *Board) look() []file {
	des, err := os.ReadDir(b.dir)
	if err != nil {
		return nil
	}
	alive := map[string]bool{}
	isAlive := func(owner string) bool {
		v, ok := alive[owner]
		if !ok {
			v = owner == b.self && b.here != nil || running(filepath.Join(b.dir, owner+hereExt))
			alive[owner] = v
		}
		return v
	}
	var out []file
	for _, de := range des {
		name := de.Name()
		ext := filepath.Ext(name)
		if _, entry := kindOf(ext); !entry && ext != toldExt && ext != hereExt && ext != ".tmp" && ext != ".making" {
			continue
		}
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if ext == ".tmp" || ext == ".making" {
			if time.Since(fi.ModTime()) > leftoverAfter {
				_ = os.Remove(filepath.Join(b.dir, name))
			}
			continue
		}
		owner := strings.TrimSuffix(name, ext)
		if ext != hereExt {
			i := strings.LastIndexByte(owner, '-')
			if i < 0 {
				continue
			}
			owner = owner[:i]
		}
		if !isAlive(owner) {
			_ = os.Remove(filepath.Join(b.dir, name))
			continue
		}
		out = append(out, file{name: name, ext: ext, owner: owner, at: fi.ModTime()})
	}
	return out
}

func readPlace(path string) (string, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, nameLimit))
	if err != nil {
		return "", false
	}
	return string(data), true
}

// Told marks others' entries as named by a toast Herdr showed. An entry
// its wrapper replaced or dropped meanwhile is left alone: that wrapper
// has something newer to say.
func (b *Board) Told(entries []string) {
	for _, e := range entries {
		if strings.ContainsAny(e, `/\`) || e == "" {
			continue
		}
		for _, ext := range kindExts {
			if os.Rename(filepath.Join(b.dir, e+ext), filepath.Join(b.dir, e+toldExt)) == nil {
				break
			}
		}
	}
}

// Taken reports whether another wrapper's toast named entry, and takes it
// off the board when so.
func (b *Board) Taken(entry string) bool {
	if entry == "" {
		return false
	}
	return os.Remove(filepath.Join(b.dir, entry+toldExt)) == nil
}

// Drop takes entry off the board, told or not.
func (b *Board) Drop(entry string) {
	if entry == "" {
		return
	}
	for _, ext := range kindExts {
		_ = os.Remove(filepath.Join(b.dir, entry+ext))
	}
	_ = os.Remove(filepath.Join(b.dir, entry+toldExt))
}

// Present says this wrapper runs here, known by place, until Close: the
// file is locked for as long as it is open, so a wrapper that was killed
// is told from a running one by its lock, never by its age or pid.
func (b *Board) Present(place string) error {
	for tries := 1; ; tries++ {
		err := b.join(place)
		// The last wrapper to leave removed the directory between our
		// making it and our file: make it again. Each retry means another
		// wrapper left in that moment, so a few are plenty.
		if err == nil || !errors.Is(err, fs.ErrNotExist) || tries == joinTries {
			return err
		}
	}
}

// joinTries bounds how often a wrapper joins again whose directory was
// removed under it.
const joinTries = 20

func (b *Board) join(place string) error {
	// Made, locked and written under another name first: a file that
	// appears under its own name is locked already, never taken for a
	// dead wrapper's.
	path := filepath.Join(b.dir, b.self+hereExt)
	tmp := filepath.Join(b.dir, "."+b.self+".making")
	if err := makeDir(b.dir); err != nil {
		return err
	}
	if b.joining != nil {
		b.joining()
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	// From here on the directory holds a file of ours, and a wrapper
	// leaving cannot remove it.
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_, err = f.WriteString(place)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		f.Close()
		_ = os.Remove(tmp)
		return err
	}
	b.here = f
	b.look() // what wrappers killed before left
	return nil
}

// Namesakes counts the wrappers of other panes running here known by the
// same place: two unlabelled Pis in one project, whose toasts would
// otherwise read the same. A wrapper nested in this one's pane is no
// namesake: the pane is the same. The files of wrappers that are gone are
// removed.
func (b *Board) Namesakes(place string) int {
	n := 0
	for _, f := range b.look() {
		if f.ext != hereExt || strings.HasPrefix(f.name, b.pane) {
			continue
		}
		if other, ok := readPlace(filepath.Join(b.dir, f.name)); ok && other == place {
			n++
		}
	}
	return n
}

// running reports whether the wrapper of a presence file still holds its
// lock.
func running(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// Close takes this wrapper's presence off the board, and the board's
// directory with it when this was the last wrapper there: one directory
// is made per Herdr socket, and sockets come and go (every test run's
// fake Herdr has its own). What killed wrappers left is swept first.
// Removing a directory removes only an empty one, so a wrapper that has
// put anything there keeps it; one that made it and had not yet put its
// presence there makes it again ([Board.Present]).
// A board Open made and no wrapper joined goes the same way.
func (b *Board) Close() {
	if b.here != nil {
		_ = os.Remove(filepath.Join(b.dir, b.self+hereExt))
		b.here.Close()
		b.here = nil
		b.look()
	}
	_ = os.Remove(b.dir)
}

// Kept is what this wrapper's freshening keeps young for cleaners of /tmp
// (control.RunConfig.Keep): the board's directory and the one above it,
// its presence file, and the entries it holds. Locks keep none of it from
// them: systemd-tmpfiles spares only a directory it cannot lock, and the
// board's directory is shared by every wrapper of the Herdr. Read from
// what Open set, never from what Present and Close change, so a
// freshening pass may ask it at any time; a file not there is skipped by
// whoever touches it.
func (b *Board) Kept() []string {
	kept := []string{filepath.Dir(b.dir), b.dir, filepath.Join(b.dir, b.self+hereExt)}
	entries, _ := os.ReadDir(b.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), b.self+"-") {
			kept = append(kept, filepath.Join(b.dir, e.Name()))
		}
	}
	return kept
}
