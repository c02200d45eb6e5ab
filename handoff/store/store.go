package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/settings"
)

// File size caps: a state.json holds every agent's system prompt, so it can
// be large, but nothing the engine writes comes near these.
const (
	maxStateSize = 64 << 20
	maxLeaseSize = 4 << 10
)

// Store is the workflow store of one home directory, seen from a cwd.
type Store struct {
	// Root is <home>/.pi/workflows/projects.
	Root string
	// Project is the storage key of the caller's cwd (Cwd, absolute):
	// its runs are searched first.
	Project string
	Cwd     string
	// Now is the clock for ages (time.Now when nil).
	Now func() time.Time
}

// New is the store under home seen from cwd. The engine uses Node's
// os.homedir() and ignores PI_CODING_AGENT_DIR for run storage.
func New(home, cwd string) *Store {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		abs = filepath.Clean(cwd)
	}
	return &Store{Root: filepath.Join(home, ".pi", "workflows", "projects"), Project: ProjectKey(cwd), Cwd: abs}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// SafePart is the engine's directory-name sanitiser: every character
// outside [a-zA-Z0-9._-] becomes "_". The engine replaces JavaScript
// characters, which are UTF-16 code units, so a rune outside the BMP (an
// emoji) becomes "__".
func SafePart(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'):
			b.WriteRune(r)
		case utf16.RuneLen(r) == 2:
			b.WriteString("__")
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ProjectKey is the engine's storage key of a launch cwd (reference §1.1):
// the sanitised base name (or "root") and the first 12 hex digits of the
// SHA-256 of the absolute, cleaned path. Symlinks are not resolved: the
// engine does not resolve them either.
func ProjectKey(cwd string) string {
	abs, err := filepath.Abs(cwd)
	if err != nil {
		abs = filepath.Clean(cwd)
	}
	base := SafePart(filepath.Base(abs))
	if abs == "/" || base == "" {
		base = "root"
	}
	sum := sha256.Sum256([]byte(abs))
	return base + "-" + hex.EncodeToString(sum[:])[:12]
}

// Run is one run directory and its decoded state.json.
type Run struct {
	ID      string // the directory name (the engine's sanitised run id)
	Dir     string
	Project string // storage key of the project directory it lives in
	RunsDir string // <project>/sessions/<session>/runs: where owner.json is
	Updated time.Time
	Record  *RunRecord

	lease *leaseOnce // shared by the runs of one session
}

// Short is the first 8 characters of the run id, as lists show it.
func (r *Run) Short() string {
	if len(r.ID) > 8 {
		return r.ID[:8]
	}
	return r.ID
}

// ShortIDs maps each run id of the store to its shortest prefix of at
// least 8 characters that no other run's id starts with: a short form
// that names one run wherever it is given (a listing's RUN column, the
// hints built on it). Only directory names are read.
func (s *Store) ShortIDs() (map[string]string, error) {
	projects, err := s.projects()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range projects {
		for _, runsDir := range s.sessionRunsDirs(p) {
			names, _ := readDirNames(runsDir)
			ids = append(ids, names...)
		}
	}
	return ShortestUnique(ids, 8), nil
}

// ShortestUnique maps each of ids to its shortest prefix of at least
// atLeast bytes that is a prefix of no other id (the whole id when there is none,
// as for an id that is another's prefix, or given twice).
func ShortestUnique(ids []string, atLeast int) map[string]string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	out := make(map[string]string, len(sorted))
	for i, id := range sorted {
		// Sorted, the id sharing the longest prefix with this one is a
		// neighbour.
		n := atLeast
		for _, j := range []int{i - 1, i + 1} {
			if j >= 0 && j < len(sorted) {
				n = max(n, commonPrefix(id, sorted[j])+1)
			}
		}
		out[id] = id[:min(n, len(id))]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Workflow is the run's workflow name ("" when unread).
func (r *Run) Workflow() string {
	if r.Record == nil {
		return ""
	}
	return r.Record.WorkflowName
}

// State is the run's state ("" when unread).
func (r *Run) State() string {
	if r.Record == nil {
		return ""
	}
	return r.Record.State
}

// Owner reads the lease of the session that owns the run, once per session
// directory: nil when there is no lease (the owner exited cleanly).
func (r *Run) Owner() (*Lease, error) {
	if r.lease == nil { // a Run built by hand
		r.lease = &leaseOnce{}
	}
	return r.lease.read(r.RunsDir)
}

type leaseOnce struct {
	once  sync.Once
	lease *Lease
	err   error
}

func (o *leaseOnce) read(runsDir string) (*Lease, error) {
	o.once.Do(func() { o.lease, o.err = ReadLease(runsDir) })
	return o.lease, o.err
}

// location is a run directory found on disk, not yet read.
type location struct {
	id, dir, project, runsDir string
}

// projects lists the project directories, the caller's first.
func (s *Store) projects() ([]string, error) {
	entries, err := readDirNames(s.Root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// No store yet is no runs yet; a link to nowhere in its place
			// is a mistake (the engine cannot make its directory there).
			if link, target := settings.BrokenLink(s.Root); link != "" {
				return nil, &FileError{Path: s.Root, Problem: fmt.Sprintf("cannot list the workflow store: %s is a symlink to %s, which does not exist; "+
					"point it at an existing directory, or remove it", link, target), Err: settings.ErrBrokenLink}
			}
			return nil, nil
		}
		return nil, &FileError{Path: s.Root, Problem: "cannot list the workflow store: " + accessProblem(s.Root, err), Err: err}
	}
	if i := slices.Index(entries, s.Project); i > 0 {
		entries[0], entries[i] = entries[i], entries[0]
	}
	return entries, nil
}

// sessionRunsDirs lists <project>/sessions/*/runs.
func (s *Store) sessionRunsDirs(project string) []string {
	dirs, _ := s.sessionRunsDirsOrWhy(project)
	return dirs
}

// sessionRunsDirsOrWhy is sessionRunsDirs, and the project's sessions
// directory when it cannot be listed.
func (s *Store) sessionRunsDirsOrWhy(project string) ([]string, *UnreadableDir) {
	dir := filepath.Join(s.Root, project, "sessions")
	sessions, err := readDirNames(dir)
	dirs := make([]string, 0, len(sessions))
	for _, sess := range sessions {
		dirs = append(dirs, filepath.Join(dir, sess, "runs"))
	}
	return dirs, unreadable(dir, err)
}

// runLocations lists every run directory of project, session by
// session; a sessions or runs directory that cannot be listed is added
// to unreadableDirs (its runs are missing).
func (s *Store) runLocations(project string, unreadableDirs *[]UnreadableDir) []location {
	runsDirs, bad := s.sessionRunsDirsOrWhy(project)
	if bad != nil {
		*unreadableDirs = append(*unreadableDirs, *bad)
	}
	var locs []location
	for _, runsDir := range runsDirs {
		ids, err := readDirNames(runsDir)
		if bad := unreadable(runsDir, err); bad != nil {
			*unreadableDirs = append(*unreadableDirs, *bad)
		}
		for _, id := range ids {
			locs = append(locs, location{id: id, dir: filepath.Join(runsDir, id), project: project, runsDir: runsDir})
		}
	}
	return locs
}

// readDirNames lists the directories in dir that the engine counts: no dot
// entries (the engine's temp directories are ".<id>.<pid>.<uuid>.tmp") and
// nothing ending in .tmp.
func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".tmp") {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 {
			// A symlinked directory is followed, as the engine's stat-based
			// scan would.
			if fi, err := os.Stat(filepath.Join(dir, n)); err != nil || !fi.IsDir() {
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		names = append(names, n)
	}
	return names, nil
}

// FindRun finds a run by its full id or a unique prefix of it. The caller's
// project is searched first: an exact id found there, or a prefix with
// matches there, settles the search. ResolveRun says too which runs of
// other projects such a prefix passed over.
func (s *Store) FindRun(ref string) (*Run, error) {
	r, _, err := s.ResolveRun(ref)
	return r, err
}

// ResolveRun is FindRun, and the runs of other projects ref, a prefix,
// matched too but passed over because it named a run of the caller's
// project (nil when there are none): a command says so, or refuses.
func (s *Store) ResolveRun(ref string) (*Run, *PassedOver, error) {
	m, err := s.locate(ref)
	if err != nil {
		return nil, nil, err
	}
	r, err := found(s.readRun(m.loc, nil))
	if err != nil {
		return nil, nil, err
	}
	return r, s.passedOver(ref, r, m), nil
}

// RunID is the id of the run ref names, found as FindRun finds it but
// without reading its state: whether a run exists does not depend on
// whether its state.json can be read.
func (s *Store) RunID(ref string) (string, error) {
	id, _, err := s.ResolveRunID(ref)
	return id, err
}

// ResolveRunID is RunID, and what ResolveRun says it passed over. Only
// then are the runs read (as far as they can be), to name them.
func (s *Store) ResolveRunID(ref string) (string, *PassedOver, error) {
	m, err := s.locate(ref)
	if err != nil || len(m.others) == 0 {
		return m.loc.id, nil, err
	}
	r, _ := s.readRun(m.loc, nil)
	return m.loc.id, s.passedOver(ref, r, m), nil
}

// PassedOver: a prefix named one run of the caller's project, whose runs
// are searched first (docs/open.md), but also starts the ids of runs of
// other projects, which the search passed over. The same prefix from
// elsewhere would be ambiguous, so a short prefix means different runs by
// the cwd: open takes the caller's run and says so, close refuses it.
type PassedOver struct {
	Ref   string
	Taken *Run
	// Others are the other projects' runs the prefix matched, most recent
	// first, read as far as they can be (Record nil when not).
	Others []*Run
	// Refs maps Taken and each of Others to its shortest prefix of at
	// least 8 characters that no other run's id in the store starts with
	// (as ShortIDs): it names that run from any project.
	Refs map[string]string
	Now  time.Time
}

// Ambiguous is the prefix refused as a prefix of every run it matches,
// whatever the project; note says why the caller's project does not settle
// it here.
func (p *PassedOver) Ambiguous(note string) *AmbiguousRunError {
	e := &AmbiguousRunError{Ref: p.Ref, Now: p.Now, Candidates: append([]*Run{p.Taken}, p.Others...), Note: note}
	sortRecentFirst(e.Candidates)
	return e
}

// match is what locate found: the run, and for a prefix the caller's
// project settled, the other projects' runs it passed over and every run
// id of the store (to name those runs).
type match struct {
	loc    location
	others []location
	ids    []string
}

func (s *Store) passedOver(ref string, taken *Run, m match) *PassedOver {
	if len(m.others) == 0 {
		return nil
	}
	p := &PassedOver{Ref: ref, Taken: taken, Now: s.now(), Refs: map[string]string{}}
	all := ShortestUnique(m.ids, 8)
	p.Refs[taken.ID] = all[taken.ID]
	for _, o := range m.others {
		// One that cannot be read still counts: it is a run.
		r, _ := s.readRun(o, nil)
		p.Others = append(p.Others, r)
		p.Refs[r.ID] = all[r.ID]
	}
	sortRecentFirst(p.Others)
	return p
}

// locate is the one place a ref is resolved to a run directory.
func (s *Store) locate(ref string) (match, error) {
	// Never a directory name under runs/: it would name another directory
	// (or none), so the ref is refused before the store is looked at.
	if ref == "" || strings.ContainsAny(ref, "/\x00") || ref == "." || ref == ".." {
		return match{}, &BadRunIDError{Ref: ref}
	}
	projects, err := s.projects()
	if err != nil {
		return match{}, err
	}
	// An exact id is a stat per session directory; try it first.
	id := SafePart(ref)
	for _, p := range projects {
		for _, runsDir := range s.sessionRunsDirs(p) {
			dir := filepath.Join(runsDir, id)
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				return match{loc: location{id: id, dir: dir, project: p, runsDir: runsDir}}, nil
			}
		}
	}
	// A prefix: the caller's project's matches (here) win, but the other
	// projects are searched too, so that what they pass over is known.
	var here, elsewhere, near []location
	var ids []string
	var unreadableDirs []UnreadableDir
	for i, p := range projects {
		for _, loc := range s.runLocations(p, &unreadableDirs) {
			ids = append(ids, loc.id)
			if !strings.HasPrefix(loc.id, ref) {
				if nearlyStarts(loc.id, ref) {
					near = append(near, loc)
				}
				continue
			}
			if i == 0 && p == s.Project {
				here = append(here, loc)
			} else {
				elsewhere = append(elsewhere, loc)
			}
		}
	}
	matches := elsewhere
	if len(here) > 0 {
		matches = here
	}
	switch {
	case len(matches) == 0:
		return match{}, &NoRunError{Ref: ref, Root: s.Root, Projects: projects, Unreadable: unreadableDirs, Near: s.nearRuns(near, ids)}
	case len(matches) == 1 && len(here) == 1:
		return match{loc: here[0], others: elsewhere, ids: ids}, nil
	case len(matches) == 1:
		return match{loc: matches[0]}, nil
	}
	e := &AmbiguousRunError{Ref: ref, Now: s.now()}
	for _, m := range matches {
		// A candidate that cannot be read still counts: it is a run.
		r, _ := s.readRun(m, nil)
		e.Candidates = append(e.Candidates, r)
	}
	sortRecentFirst(e.Candidates)
	return match{}, e
}

// nearRuns names the runs a ref nearly starts (as NoRunError.Near), most
// recent first, at most maxNear: each by its shortest unique prefix of at
// least 8 characters, which names it from anywhere, and its workflow.
func (s *Store) nearRuns(near []location, ids []string) []string {
	if len(near) == 0 {
		return nil
	}
	refs := ShortestUnique(ids, 8)
	var runs []*Run
	for _, loc := range near {
		r, _ := s.readRun(loc, nil)
		runs = append(runs, r)
	}
	sortRecentFirst(runs)
	var out []string
	for _, r := range runs[:min(len(runs), maxNear)] {
		workflow := r.Workflow()
		if r.Record == nil {
			workflow = "unreadable"
		}
		out = append(out, fmt.Sprintf("%s (%s)", shown(refs[r.ID]), shown(workflow)))
	}
	return out
}

// found drops the half-read run that comes with an error.
func found(r *Run, err error) (*Run, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// readRun reads a run's state.json. The run comes back even with an error,
// for listings to show; lease is shared by the runs of one session (nil:
// a lease of its own).
func (s *Store) readRun(loc location, lease *leaseOnce) (*Run, error) {
	if lease == nil {
		lease = &leaseOnce{}
	}
	path := filepath.Join(loc.dir, "state.json")
	r := &Run{ID: loc.id, Dir: loc.dir, Project: loc.project, RunsDir: loc.runsDir, lease: lease}
	data, fi, err := readRegularStat(path, maxStateSize)
	if errors.Is(err, fs.ErrNotExist) {
		if _, derr := os.Lstat(loc.dir); errors.Is(derr, fs.ErrNotExist) {
			// Found by the scan, removed before this read.
			return r, &FileError{Path: loc.dir, Problem: "removed as herdr-pi read the store: the run is gone; `herdr-pi open --list` lists the runs there are", Err: ErrRunRemoved}
		}
		return r, &FileError{Path: path, Problem: "missing: the run directory has no state (the engine is still creating it, or it is not a run); pick another run from `herdr-pi open --list`", Err: err}
	}
	var fe *FileError
	if errors.As(err, &fe) && fe.Err == nil {
		// Something other than a file stands there.
		return r, &FileError{Path: path, Problem: fe.Problem + "; the engine keeps the run's state in a file there: move it away, or pick another run from `herdr-pi open --list`"}
	}
	if err != nil {
		return r, err
	}
	r.Updated = fi.ModTime()
	rec, err := DecodeRun(data)
	if err != nil {
		return r, &FileError{Path: path, Problem: "corrupt run state: " + err.Error() + " (the engine writes it atomically, so something else changed it); pick another run from `herdr-pi open --list`", Err: err}
	}
	if want := SafePart(rec.ID); want != loc.id {
		return r, &FileError{Path: path, Problem: fmt.Sprintf("not this run's state: it names run %q, but its directory is named %q "+
			"(the engine keeps a run in the directory named for its id, and does not load a state that names another run); "+
			"if the directory was renamed, name it %s again, else pick another run from `herdr-pi open --list`",
			clipID(rec.ID), clipID(loc.id), clipID(want)), Err: ErrNotItsRun}
	}
	r.Record = rec
	return r, nil
}

// ErrRunRemoved is the cause of a run whose directory went away while it
// was read: it is gone, not still being made.
var ErrRunRemoved = errors.New("the run's directory was removed")

// ErrNotItsRun is the cause of a run whose state.json names another run.
var ErrNotItsRun = errors.New("the run's state names another run")

// clipID is an id as a message quotes it: a state.json may hold any
// string there, up to the file's size.
func clipID(id string) string {
	const max = 80
	if len(id) <= max {
		return id
	}
	return strings.ToValidUTF8(id[:max], "") + "…"
}

// ListedRun is a run of a listing, with the problem that kept it from
// being read (Err), if any.
type ListedRun struct {
	*Run
	Err error
}

// UnreadableDir is a sessions or runs directory of the store that could
// not be listed: the runs in it are missing from a listing.
type UnreadableDir struct {
	Path string `json:"path"`
	// Problem is why, and the way out.
	Problem string `json:"problem"`
}

// unreadable is the directory dir as [UnreadableDir] when listing it
// failed with err for another reason than its absence (no sessions or
// runs yet is no runs, not a problem); nil otherwise.
func unreadable(dir string, err error) *UnreadableDir {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return &UnreadableDir{Path: dir, Problem: accessProblem(dir, err)}
}

// Runs lists every run of the store, most recently updated first. A run
// whose state.json is unreadable is listed with its error rather than
// hiding the others; a sessions or runs directory that cannot be listed
// is named in unreadableDirs, with why and the way out: its runs are
// missing.
func (s *Store) Runs() (runs []ListedRun, unreadableDirs []UnreadableDir, err error) {
	projects, err := s.projects()
	if err != nil {
		return nil, nil, err
	}
	var locs []location
	leases := map[string]*leaseOnce{}
	for _, p := range projects {
		for _, loc := range s.runLocations(p, &unreadableDirs) {
			if leases[loc.runsDir] == nil {
				leases[loc.runsDir] = &leaseOnce{}
			}
			locs = append(locs, loc)
		}
	}
	// Decoding is the cost of a listing (every agent's system prompt is in
	// state.json): spread it over the CPUs. Runs owns these workers and
	// waits for them before it returns.
	out := make([]ListedRun, len(locs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(locs)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(locs); i = int(next.Add(1)) - 1 {
				r, err := s.readRun(locs[i], leases[locs[i].runsDir])
				out[i] = ListedRun{Run: r, Err: err}
			}
		})
	}
	wg.Wait()
	// A run removed since the scan is no run: not a row with a problem.
	out = slices.DeleteFunc(out, func(r ListedRun) bool { return errors.Is(r.Err, ErrRunRemoved) })
	slices.SortStableFunc(out, func(a, b ListedRun) int { return compareRecent(a.Run, b.Run) })
	return out, unreadableDirs, nil
}

func sortRecentFirst(runs []*Run) { slices.SortStableFunc(runs, compareRecent) }

func compareRecent(a, b *Run) int {
	if c := b.Updated.Compare(a.Updated); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// readRegular reads a regular file of at most max bytes.
func readRegular(path string, max int64) ([]byte, error) {
	data, _, err := readRegularStat(path, max)
	return data, err
}

func readRegularStat(path string, max int64) ([]byte, fs.FileInfo, error) {
	// O_NONBLOCK: a FIFO planted in the store must not hang the open; the
	// mode check below then refuses it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		return nil, nil, &FileError{Path: path, Problem: "cannot read: " + accessProblem(path, err), Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, &FileError{Path: path, Problem: "cannot stat: " + unwrapPathError(err), Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &FileError{Path: path, Problem: notRegular(fi.Mode())}
	}
	if fi.Size() > max {
		return nil, nil, &FileError{Path: path, Problem: fmt.Sprintf("too large (%d bytes, the limit is %d)", fi.Size(), max)}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, &FileError{Path: path, Problem: "cannot read: " + unwrapPathError(err), Err: err}
	}
	if int64(len(data)) > max {
		return nil, nil, &FileError{Path: path, Problem: fmt.Sprintf("too large (over %d bytes)", max)}
	}
	return data, fi, nil
}

// notRegular says what a file that should be regular is instead, in
// words: a mode string ("d---------") is for ls readers.
func notRegular(m fs.FileMode) string {
	if m.IsDir() {
		return "is a directory, not a file"
	}
	return "is " + settings.FileKind(m) + ", not a regular file"
}

func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// accessProblem says why path could not be opened and the way out: the
// errno alone names neither the culprit nor the fix.
func accessProblem(path string, err error) string {
	why := unwrapPathError(err)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		if file := fileOnTheWay(path); file != "" {
			return settings.NotADirectory(file)
		}
	case errors.Is(err, syscall.ELOOP):
		return why + "; " + settings.LoopFix()
	case errors.Is(err, fs.ErrPermission):
		if shut := settings.ShutDirectory(path, "the user running herdr-pi, who must be the one who runs Pi"); shut != "" {
			return why + ": " + shut
		}
		mode := "u+r"
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			mode = "u+rx" // listed with r, entered with x
		}
		// Every directory above it lets the user in (ShutDirectory found
		// none shut): path itself is what refuses.
		return why + "; make it readable by the user running herdr-pi, who must be the one who runs Pi (chmod " + mode + " " + shellword.Word(path) + ", or chown it)"
	}
	return why + "; look at it with `ls -ld " + shellword.Word(path) + "`"
}

// fileOnTheWay is what stands where a directory should on the way to
// path, path itself included, following one symlink at path; "" when
// nothing is found.
func fileOnTheWay(path string) string {
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return path
	}
	if file := settings.FileOnTheWay(path); file != "" {
		return file
	}
	if target, err := os.Readlink(path); err == nil {
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		return settings.FileOnTheWay(target)
	}
	return ""
}
