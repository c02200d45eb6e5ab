package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/internal/shellword"
)

// Limits for every settings file herdr-pi reads. Real files are a few KiB
// and a handful of levels deep; the caps only keep a hostile or broken file
// from hanging the wrapper before the agent starts (the TOML decoder takes
// seconds and gigabytes on a few thousand nested inline tables).
const (
	MaxFileBytes = 1 << 20
	MaxDepth     = 32
)

// Format is the syntax of a settings file, which decides how nesting is
// counted before it is parsed.
type Format int

// The formats herdr-pi reads.
const (
	TOML Format = iota
	JSON
)

func (f Format) String() string {
	if f == JSON {
		return "JSON"
	}
	return "TOML"
}

// ErrBrokenLink is what a *FileError wraps for a file behind a symlink
// whose target does not exist: not fs.ErrNotExist, since the person made
// the link and meant a file to be read through it (a dotfiles checkout
// that moved, say), so it is a mistake to report, not "no file".
var ErrBrokenLink = errors.New("broken symlink")

// FileError says why a settings file was not read. Reason says what is
// wrong and the way out, without the path, so callers can put it in their
// own file:line messages. A missing file matches fs.ErrNotExist; one
// behind a symlink that leads nowhere matches [ErrBrokenLink] instead.
type FileError struct {
	Path string
	// Line is where the problem is (too deep nesting), else 0.
	Line   int
	Reason string
	// Fix is the way out on its own, when Reason ends with it and a
	// caller may show it apart (doctor's fix row): for permission denied,
	// [ReadPermissionFix] as judged when the read failed; for [ErrNotOurs],
	// what to do about the file's owner or mode. "" otherwise.
	Fix string
	Err error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Reason)
	}
	return e.Path + ": " + e.Reason
}

func (e *FileError) Unwrap() error { return e.Err }

// ReadFile reads a settings file safely: only a regular file (after
// symlinks) of at most [MaxFileBytes], whose arrays, tables and objects
// nest at most [MaxDepth] deep. Anything else is a *FileError that says
// what is wrong and how to fix it; nothing is parsed, and a FIFO or a
// device never blocks the caller or fills its memory.
//
// Every reader of a settings file goes through here, so the checks hold for
// herdr-pi's config, detection manifests, the notification configs and
// Pi's settings.json alike.
func ReadFile(path string, format Format) ([]byte, error) {
	return readFile(path, format, "", false)
}

// ReadOwnFile is [ReadFile] for a file that steers herdr-pi itself (its
// config, its detection manifests): it is refused, too, when another user
// owns it or anyone may write it. Such a file could send the agent's
// questions to someone else's ntfy server, or keep a pane from ever
// showing blocked; ssh refuses its own config on the same grounds. root's
// files pass (a config a system administrator installed).
func ReadOwnFile(path string, format Format) ([]byte, error) {
	return readFile(path, format, "", true)
}

// ReadNamedFile is [ReadFile] for a path the person named (HERDR_PI_CONFIG,
// detect --manifest) rather than one herdr-pi looks for: a directory or a
// pipe standing there is theirs, so the way out is wayOut (naming another
// path, "point HERDR_PI_CONFIG at your config file"), never to remove it.
func ReadNamedFile(path string, format Format, wayOut string) ([]byte, error) {
	return readFile(path, format, wayOut, false)
}

// readFile is ReadFile; wayOut, when not "", is what to do about a path
// that is not a regular file (ReadNamedFile); own asks for ReadOwnFile's
// rule.
func readFile(path string, format Format, wayOut string, own bool) ([]byte, error) {
	fail := func(reason string, err error) error { return &FileError{Path: path, Reason: reason, Err: err} }
	// failRead adds, to a read permission denied, whatever refused it and
	// the way out: nothing in the file can be wrong yet.
	failRead := func(reason string, err error) error {
		if !errors.Is(err, fs.ErrPermission) {
			return fail(reason, err)
		}
		fix := ReadPermissionFix(path, "the user running herdr-pi")
		return &FileError{Path: path, Reason: reason + "; " + fix, Fix: fix, Err: err}
	}
	// Stat first, so a device is never even opened (opening some has side
	// effects); fstat after the open closes the race with a swap.
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if link, target := BrokenLink(path); link != "" {
				return nil, fail(brokenLinkReason(path, link, target), ErrBrokenLink)
			}
			return nil, fail("does not exist", err)
		}
		if errors.Is(err, unix.ENOTDIR) {
			if file := FileOnTheWay(path); file != "" {
				return nil, fail("cannot read: "+NotADirectory(file), err)
			}
		}
		if errors.Is(err, unix.ELOOP) {
			return nil, fail("cannot read: "+unwrapPathError(err)+"; "+LoopFix(), err)
		}
		return nil, failRead("cannot read: "+unwrapPathError(err), err)
	}
	// Reading /dev/null gives nothing, whatever it is: HERDR_PI_CONFIG=/dev/null,
	// or a settings file linked there, is the usual way to say "an empty
	// file", not a device someone put in the wrong place.
	if isNullDevice(fi) {
		return []byte{}, nil
	}
	if reason := notRegular(fi.Mode(), path, wayOut); reason != "" {
		return nil, fail(reason, nil)
	}
	// O_NONBLOCK: should a FIFO be swapped in after the stat, the open
	// returns at once instead of waiting for a writer.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, failRead("cannot open: "+err.Error(), &fs.PathError{Op: "open", Path: path, Err: err})
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return nil, fail("cannot read: "+unwrapPathError(err), err)
	}
	if reason := notRegular(fi.Mode(), path, wayOut); reason != "" {
		return nil, fail(reason, nil)
	}
	if own {
		// Checked on the open file: a swap after the open is not read.
		// The fix is kept apart too: doctor shows it on its own row, and
		// for such a file it is about who may write it, never its content.
		why, fix := notOurs(fi, path)
		if why == "" {
			why, fix = dirNotOurs(path)
		}
		if why != "" {
			return nil, &FileError{Path: path, Reason: why + "; " + fix, Fix: fix, Err: ErrNotOurs}
		}
	}
	if fi.Size() > MaxFileBytes {
		return nil, fail(tooBig(fi.Size()), nil)
	}
	// The file may grow after the fstat: read one byte past the cap to see.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fail("cannot read: "+unwrapPathError(err), err)
	}
	if len(data) > MaxFileBytes {
		return nil, fail(tooBig(int64(len(data))), nil)
	}
	if err := CheckNesting(data, format); err != nil {
		var fe *FileError
		errors.As(err, &fe)
		fe.Path = path
		return nil, fe
	}
	return data, nil
}

// CheckNesting reports, as a *FileError without a path, text that nests
// deeper than [MaxDepth], is larger than [MaxFileBytes] or is not UTF-8 by
// its byte-order mark. Parsers that take text rather than a file call it
// before decoding.
func CheckNesting(data []byte, format Format) error {
	if len(data) > MaxFileBytes {
		return &FileError{Reason: tooBig(int64(len(data)))}
	}
	if enc := wideEncoding(data); enc != "" {
		// The TOML decoder drops a UTF-16 mark and reads what follows, so a
		// file holding only the mark (an editor's empty "Unicode" file)
		// would pass as valid while the user believes it says something.
		return &FileError{Reason: fmt.Sprintf(
			"is %s (it starts with a %s byte-order mark); %s files must be UTF-8: save it as UTF-8", enc, enc, format)}
	}
	scan := tomlDepth
	if format == JSON {
		scan = jsonDepth
	}
	if line := scan(data, MaxDepth); line > 0 {
		return &FileError{Line: line, Reason: fmt.Sprintf(
			"%s nests deeper than %d levels (tables, arrays, dotted keys): refusing to parse it; flatten it", format, MaxDepth)}
	}
	return nil
}

// ErrNotOurs is behind a *FileError of [ReadOwnFile] for a file of
// another user or one anyone may write.
var ErrNotOurs = errors.New("not a file of yours alone")

// notOurs says why herdr-pi takes no settings from fi (ReadOwnFile), and
// the way out; "" when it may.
func notOurs(fi fs.FileInfo, path string) (why, fix string) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
		return fmt.Sprintf("belongs to uid %d, not to you (uid %d): herdr-pi takes its settings only from your own files (another user's could send your agent's questions to their server)", st.Uid, os.Getuid()),
			"copy it to a file of yours"
	}
	if perm := fi.Mode().Perm(); perm&0o002 != 0 {
		return fmt.Sprintf("may be written by anyone (mode %04o): herdr-pi takes no settings from it", perm),
			"run chmod o-w " + shellword.Word(path)
	}
	return "", ""
}

// dirNotOurs says why a file of ours at path still cannot be trusted, ""
// when it can: a directory that holds it (where the path names it, and
// where its symlinks lead) lets another user put their file under its
// name — one anyone may write and that is not sticky, or one another user
// (not root) owns. A sticky directory (/tmp) lets others remove only
// their own files; group-writable is the person's choice (umask 002).
// fix is the way out.
func dirNotOurs(path string) (why, fix string) {
	dirs := []string{filepath.Dir(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, dir := range dirs {
		fi, err := os.Stat(dir)
		if err != nil {
			continue // the file was opened through it: nothing more to learn
		}
		shown := shellword.Word(dir)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
			return fmt.Sprintf("is in directory %s, which belongs to uid %d, not to you (uid %d): they could put another file in its place, and herdr-pi takes its settings only from your own", dir, st.Uid, os.Getuid()),
				"move it to a directory of yours"
		}
		if perm := fi.Mode().Perm(); perm&0o002 != 0 && fi.Mode()&fs.ModeSticky == 0 {
			return fmt.Sprintf("is in directory %s, which may be written by anyone and is not sticky (mode %04o): anyone could put another file in its place, and herdr-pi takes no settings from it", dir, perm),
				fmt.Sprintf("run chmod o-w %s (or chmod +t %s), or move it to a directory of yours", shown, shown)
		}
	}
	return "", ""
}

// notRegular says what the file at path is instead of a regular file, and
// the way out (wayOut for a path the person named); "" for a regular file.
func notRegular(m fs.FileMode, path, wayOut string) string {
	fix := "; herdr-pi reads settings only from regular files: put a file (or a symlink to one) there, or remove it"
	if wayOut != "" {
		fix = "; herdr-pi reads settings only from regular files: " + wayOut
	} else if fi, err := os.Lstat(path); m&fs.ModeDevice != 0 && err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		// The device itself was named (HERDR_PI_CONFIG=/dev/zero): replacing
		// or removing it would break the machine.
		fix = "; herdr-pi reads settings only from regular files: name one instead, and leave the device as it is"
	}
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "is a directory, not a file" + fix
	}
	return "is " + FileKind(m) + ", not a regular file" + fix
}

// FileKind names, for messages, what a file that is not a regular one is
// ("a directory", "a named pipe (FIFO)").
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a file"
	}
	return "an unusual file"
}

func tooBig(n int64) string {
	return fmt.Sprintf("is %d bytes, over the %d-byte (1 MiB) limit for settings files: refusing to parse it; shorten it", n, MaxFileBytes)
}

// ReadPermissionFix is the way out of path that who may not read
// (permission denied): a directory on the way they may not enter, which a
// chmod of the file cannot open, is named with chmod u+rx ([ShutDirectory]);
// else path itself refuses them, and chmod u+r on it is the fix. Judged
// now, by stat as the open judged: call it as the user whose read failed.
// Every message about an unreadable file says its way out with this.
func ReadPermissionFix(path, who string) string {
	if shut := ShutDirectory(path, who); shut != "" {
		return shut
	}
	return "make " + path + " readable by " + who + " (chmod u+r " + shellword.Word(path) + ", or chown it)"
}

// ShutDirectory names the directory on the way to path that this user
// may not enter, with the chmod that opens it, for a message that says
// why path could not be read ("permission denied: the directory … cannot
// be entered; make it searchable by who (chmod u+rx …, or chown it)");
// "" when no directory is shut, and path itself is what refuses.
func ShutDirectory(path, who string) string {
	dir := shutDirOnTheWay(path)
	if dir == "" {
		return ""
	}
	return "the directory " + dir + " cannot be entered; make it searchable by " + who +
		" (chmod u+rx " + shellword.Word(dir) + ", or chown it)"
}

// shutDirOnTheWay is the outermost directory above path that this user
// may not enter (no search permission: stat of what is in it fails with
// permission denied), or "": then path itself is what refuses. Found by
// stat, not access(2), so that it judges as the open did. A symlink on the
// way (the file, or a directory, linked in from dotfiles) is followed as
// the open followed it: a chmod of the link changes its target, which a
// shut directory on the target's way keeps out of reach all the same.
func shutDirOnTheWay(path string) string { return shutDirVia(path, 0) }

// maxLinks is how many symlinks shutDirVia follows, as the kernel's
// lookup does (ELOOP beyond).
const maxLinks = 40

func shutDirVia(path string, links int) string {
	path = filepath.Clean(path)
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != filepath.Separator {
			continue
		}
		fi, err := os.Lstat(path[:i])
		if errors.Is(err, fs.ErrPermission) {
			return filepath.Dir(path[:i])
		}
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || links >= maxLinks {
			continue
		}
		target, err := os.Readlink(path[:i])
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path[:i]), target)
		}
		return shutDirVia(target+path[i:], links+1)
	}
	return ""
}

// FileOnTheWay is the nearest directory of path that is something else (a
// file where ~/.config/herdr-pi should be, say), or "": "not a directory"
// alone names neither the culprit nor the fix.
func FileOnTheWay(path string) string {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil {
			if fi.IsDir() {
				return ""
			}
			return dir
		}
		if parent := filepath.Dir(dir); parent == dir {
			return ""
		}
	}
}

// BrokenLink is the symlink on the way to path (path itself or one of its
// directories) whose target does not exist, and that target as the link
// spells it; "", "" when there is none, and a missing path is simply
// missing. os.Stat follows links, so without this a link to nowhere reads
// as no file at all.
func BrokenLink(path string) (link, target string) {
	for p := path; ; p = filepath.Dir(p) {
		if fi, err := os.Lstat(p); err == nil {
			// The nearest part that exists decides: a link that leads
			// somewhere, or no link at all, means the rest is just missing.
			if fi.Mode()&fs.ModeSymlink == 0 {
				return "", ""
			}
			if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
				return "", ""
			}
			target, _ := os.Readlink(p)
			return p, target
		}
		if filepath.Dir(p) == p {
			return "", ""
		}
	}
}

// brokenLinkReason says which link on the way to path leads nowhere.
func brokenLinkReason(path, link, target string) string {
	if link == path {
		return fmt.Sprintf("is a symlink to %s, which does not exist; point it at an existing file, or remove it", target)
	}
	return fmt.Sprintf("cannot read: %s is a symlink to %s, which does not exist; point it at an existing directory, or remove it", link, target)
}

// LoopFix is the way out of ELOOP at path ("too many levels of symbolic
// links" alone names neither the link nor what to do).
func LoopFix() string {
	return "a symlink on the way leads back to itself: see where each link there leads with `ls -l`, " +
		"then point the loop's link at a real directory or file, or remove it"
}

// NotADirectory says that what stands at path, where a directory should
// be, is something else. Only a regular file is worth moving aside: a
// device such as /dev/null in a directory's place comes from a variable
// that names it (PI_CODING_AGENT_DIR=/dev/null), which the caller knows
// about and this function does not.
func NotADirectory(path string) string {
	fi, err := os.Stat(path)
	if err == nil && !fi.Mode().IsRegular() {
		return fmt.Sprintf("%s is %s, not a directory", path, FileKind(fi.Mode()))
	}
	return path + " is a file, not a directory; move it away or rename it, so the directory can be made"
}

// IsNullDevice reports whether path is (or leads by symlinks to) the null
// device, which [ReadFile] reads as an empty file.
func IsNullDevice(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && isNullDevice(fi)
}

func isNullDevice(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// unwrapPathError drops the path from an *fs.PathError: messages name the
// file themselves.
func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// wideEncoding names the encoding a UTF-16 or UTF-32 byte-order mark at
// the start of data declares, or "" when there is none.
func wideEncoding(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xff, 0xfe, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xfe, 0xff}):
		return "UTF-32"
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}), bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return "UTF-16"
	}
	return ""
}
