package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/herdr-pi/herdr-pi/bridge/control"
	"github.com/herdr-pi/herdr-pi/internal/logfile"
	"github.com/herdr-pi/herdr-pi/internal/shellword"
	"github.com/herdr-pi/herdr-pi/notify/osc"
	"github.com/herdr-pi/herdr-pi/settings"
)

// runtimeChecks is the doctor's runtime section: the private directory
// that holds every wrapper's socket, token and probe, the pane registry
// that lets pane hooks find their wrapper, and the log's directory.
func runtimeChecks(_ context.Context, d Input) []Row {
	return []Row{runtimeDirRow(d), registryRow(d), logRow(d)}
}

// logRow checks the log's directory by the runtime directory's rule, which
// herdr-pi applies to it before writing a line: ours and 0700, or no log.
func logRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "log", Status: status, Detail: detail, Fix: fix}
	}
	dir := d.Paths.StateDir
	file := filepath.Join(dir, logfile.DefaultName)
	if strings.EqualFold(d.Env.Get("HERDR_PI_LOG"), "off") {
		return row(OK, "HERDR_PI_LOG=off: herdr-pi writes no log", "")
	}
	err := control.CheckPrivateDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if at, why := unmakeable(dir, true); at != "" {
			return row(Warn, fmt.Sprintf("the log directory %s cannot be made: %s %s; until then herdr-pi writes no log (everything else works)", dir, at, why),
				fmt.Sprintf("make %s writable for you, or point XDG_STATE_HOME at a directory of yours", at))
		}
		return row(OK, fmt.Sprintf("%s does not exist yet: the first herdr-pi creates it, mode 0700, with the log %s in it", dir, logfile.DefaultName), "")
	case err != nil:
		return row(Warn, "the log "+privateDirProblem(err)+"; until then herdr-pi writes no log (everything else works)", privateDirFix(err, stateVar, d.Env))
	}
	if problem := logFileProblem(file); problem != "" {
		return row(Warn, fmt.Sprintf("the log %s %s: herdr-pi writes no log (everything else works)", file, problem),
			fmt.Sprintf("remove %s; the next herdr-pi creates it again as a regular file", file))
	}
	if v := d.Env.Get("HERDR_PI_LOG"); v != "" && !strings.EqualFold(v, "debug") && !strings.EqualFold(v, "info") {
		// Likely meant as off (0, none, false): wrap may not say so on
		// the agent's screen, so doctor does.
		return row(Warn, fmt.Sprintf("HERDR_PI_LOG=%q is not off, debug or info: herdr-pi logs as if it were unset, to %s", v, file),
			"HERDR_PI_LOG=off turns the log off, HERDR_PI_LOG=debug makes it verbose")
	}
	return row(OK, fmt.Sprintf("herdr-pi logs to %s (its directory is ours and 0700)", file), "")
}

// logFileProblem says why herdr-pi could not append to the log file, or
// "" when it can (or the file does not exist yet): the log takes only a
// regular file of its own, never through a symlink (logfile.openLog), so
// a directory or a FIFO there means no line is ever written.
func logFileProblem(file string) string {
	fi, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return "cannot be checked: " + err.Error()
	case fi.Mode()&fs.ModeSymlink != 0:
		return "is a symlink, which herdr-pi does not write through"
	case !fi.Mode().IsRegular():
		return "is " + settings.FileKind(fi.Mode()) + ", not a regular file"
	case unix.Access(file, unix.W_OK) != nil:
		return "cannot be written by the user running herdr-pi (its mode is " + fi.Mode().Perm().String() + ")"
	}
	return ""
}

func runtimeDirRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "directory", Status: status, Detail: detail, Fix: fix}
	}
	base := d.Paths.RuntimeBase
	err := control.CheckPrivateDir(base)
	const without = "; until then wrap runs the agent without its control socket: no probe, no 'herdr-pi waiting' or 'status'"
	if errors.Is(err, fs.ErrNotExist) {
		// Its parent must take the directory: statfs only, no test file
		// in a directory that is not ours (/tmp, say).
		if parent := filepath.Dir(base); isDir(parent) {
			if err := d.room(parent, false); err != nil {
				return row(Fail, fmt.Sprintf("%s cannot be made: %v", base, err)+without, roomFix(parent, err, d.Env))
			}
		}
		at, why := unmakeable(base, false)
		if at == "" {
			return row(OK, fmt.Sprintf("%s does not exist yet: the first wrapper creates it, mode 0700", base), "")
		}
		fix := fmt.Sprintf("point XDG_RUNTIME_DIR at a directory of yours (unset, herdr-pi uses %s)", fallbackFor(runtimeVar, d.Env))
		if why == notThere {
			fix = fmt.Sprintf("create %s (mkdir -m 700 -p %s), or point XDG_RUNTIME_DIR at a directory of yours that exists (unset, herdr-pi uses %s)", at, shellword.Word(at), fallbackFor(runtimeVar, d.Env))
		}
		return row(Fail, fmt.Sprintf("%s cannot be made: %s %s", base, at, why)+without, fix)
	}
	if err != nil {
		return row(Fail, privateDirProblem(err)+without, privateDirFix(err, runtimeVar, d.Env))
	}
	if err := d.room(base, true); err != nil {
		return row(Fail, err.Error()+without, roomFix(base, err, d.Env))
	}
	detail := base + " is ours and 0700"
	var live, dead int
	for _, r := range control.RunDirs(base) {
		if r.Alive {
			live++
		} else {
			dead++
		}
	}
	if live+dead > 0 {
		detail += fmt.Sprintf(" (run directories: %d of running wrappers", live)
		if dead > 0 {
			detail += fmt.Sprintf(", %d left by wrappers that were killed, which the next wrapper removes", dead)
		}
		detail += ")"
	}
	return row(OK, detail, "")
}

// roomFix is the way out of a directory that cannot take a new file:
// what to free or fix on its filesystem, or another directory.
func roomFix(dir string, err error, env settings.Env) string {
	elsewhere := fmt.Sprintf(", or point XDG_RUNTIME_DIR at a directory of yours on another filesystem (unset, herdr-pi uses %s); then start the agent again under herdr-pi wrap", fallbackFor(runtimeVar, env))
	var re *control.RoomError
	if !errors.As(err, &re) {
		return "check " + dir + " and its filesystem" + elsewhere
	}
	switch re.Problem {
	case control.RoomSpace:
		return fmt.Sprintf("free space on the filesystem of %s (df -h %[1]s shows it)", dir) + elsewhere
	case control.RoomInodes:
		return fmt.Sprintf("remove files on the filesystem of %s (df -i %[1]s counts its inodes)", dir) + elsewhere
	case control.RoomReadOnly:
		return fmt.Sprintf("remount the filesystem of %s read-write", dir) + elsewhere
	case control.RoomDenied:
		return fmt.Sprintf("find what refuses writes in %s (lsattr -d %[1]s shows an immutable attribute; a security module logs its denials)", dir) + elsewhere
	}
	return "check " + dir + " and its filesystem" + elsewhere
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// fileOnTheWay is the private directory whose making err stopped, and the
// file that stands where a directory above it should be (~/.local/state a
// file, say), or "", "": lstat says only "not a directory", naming
// neither that file nor the fix.
func fileOnTheWay(err error) (dir, file string) {
	var pe *control.PrivateDirError
	if !errors.As(err, &pe) || !errors.Is(err, syscall.ENOTDIR) {
		return "", ""
	}
	return pe.Dir, settings.FileOnTheWay(pe.Dir)
}

// The variables that choose where the private directories are: the
// way out of one that cannot be used is often another place.
const (
	runtimeVar = "XDG_RUNTIME_DIR" // the runtime directory and the pane registry
	stateVar   = "XDG_STATE_HOME"  // the log's directory
)

// privateDirProblem is a private directory's problem for a row's detail.
// The way out is the fix's (privateDirFix), which knows the variable that
// moves the directory.
func privateDirProblem(err error) string {
	if dir, file := fileOnTheWay(err); file != "" {
		return fmt.Sprintf("directory %s cannot be made: %s is a file, not a directory", dir, file)
	}
	if above, owner, mode := closedAbove(err); above != "" {
		return fmt.Sprintf("private directory %s cannot be reached: %s is closed to you (it belongs to uid %d, mode %04o)", privateDir(err), above, owner, mode)
	}
	var pe *control.PrivateDirError
	if errors.As(err, &pe) && pe.Problem == control.ProblemOwner {
		return fmt.Sprintf("private directory %s belongs to uid %d, not to us (uid %d): refusing to use it", pe.Dir, pe.Owner, os.Getuid())
	}
	if errors.As(err, &pe) && pe.Problem == control.ProblemMode {
		return fmt.Sprintf("private directory %s has mode %04o, want 0700: refusing to use it", pe.Dir, pe.Mode)
	}
	if errors.As(err, &pe) && pe.Problem == control.ProblemParent {
		return fmt.Sprintf("private directory %s is under %s, which others may write and which is not sticky (anyone could put a directory of theirs in place of ours): refusing to use it", pe.Dir, pe.Parent)
	}
	if errors.As(err, &pe) && pe.Problem == control.ProblemNotDir && pe.Owner != os.Getuid() {
		return fmt.Sprintf("private directory %s is not a directory: a symlink or file of uid %d, not ours (uid %d), is in its place: refusing to use it", pe.Dir, pe.Owner, os.Getuid())
	}
	return err.Error()
}

// privateDirFix is the way out of each problem a private directory can
// have; via is the variable that puts the directory elsewhere, env where
// it is read.
func privateDirFix(err error, via string, env settings.Env) string {
	var pe *control.PrivateDirError
	if !errors.As(err, &pe) {
		return "check the directory and its permissions"
	}
	if dir, file := fileOnTheWay(err); file != "" {
		fix := fmt.Sprintf("move %s away or rename it: it is a file where %s needs a directory", file, dir)
		if v := env.Get(via); v != "" && strings.HasPrefix(filepath.Clean(v)+"/", file+"/") {
			// The variable leads into the file: it may well be the
			// person's own (a script, a note), and the variable the
			// likelier mistake.
			fix += fmt.Sprintf(", or point %s at a directory of yours, or unset it (herdr-pi then uses %s): %s=%s names that file", via, fallbackFor(via, env), via, v)
		}
		return fix
	}
	if above, owner, _ := closedAbove(err); above != "" {
		if v := env.Get(via); v != "" && strings.HasPrefix(filepath.Clean(v)+"/", above+"/") {
			// The variable leads into the closed directory: kept from
			// another user's session, as su (without -l) and sudo -E
			// keep it.
			return fmt.Sprintf("point %s at a directory of yours, or unset it (herdr-pi then uses %s): %s=%s leads into %s, which belongs to uid %d (kept from that user's session by su or sudo -E?)",
				via, fallbackFor(via, env), via, v, above, owner)
		}
		return fmt.Sprintf("let uid %d into %s (it belongs to uid %d), or point %s at a directory of yours", os.Getuid(), above, owner, via)
	}
	switch pe.Problem {
	case control.ProblemMode:
		return "chmod 700 " + shellword.Word(pe.Dir)
	case control.ProblemParent:
		return fmt.Sprintf("chmod +t %s (or chmod o-w %s), or point %s at a directory of your own", shellword.Word(pe.Parent), shellword.Word(pe.Parent), via)
	case control.ProblemOwner:
		return fmt.Sprintf("remove %s (it belongs to uid %d: ask its owner or root), or point %s at a directory of your own", pe.Dir, pe.Owner, via)
	case control.ProblemNotDir:
		if pe.Owner != os.Getuid() {
			// Another user's, in a sticky directory: only its owner or
			// root may remove it.
			return fmt.Sprintf("remove %s (a symlink or file of uid %d is in its place: ask its owner or root), or point %s at a directory of your own", pe.Dir, pe.Owner, via)
		}
		return "remove " + pe.Dir + " (a symlink or file is in its place); herdr-pi creates the directory again"
	}
	return "check that you can read " + pe.Dir + " and its parent"
}

// fallbackFor is where herdr-pi puts its directories when via is unset:
// for the runtime directory TMPDIR's directory or /tmp, as
// settings.Resolve chooses, not always /tmp.
func fallbackFor(via string, env settings.Env) string {
	if via == stateVar {
		return "~/.local/state"
	}
	return settings.RuntimeFallback(env)
}

// privateDir is the directory a *control.PrivateDirError is about.
func privateDir(err error) string {
	var pe *control.PrivateDirError
	if errors.As(err, &pe) {
		return pe.Dir
	}
	return ""
}

// closedAbove is, for a private directory that could not even be looked
// at (lstat: permission denied), the directory above it this user may not
// enter, with its owner and mode; "" otherwise. It is the one that lstat
// itself can see while it cannot see into it: another user's
// /run/user/<uid>, say, which su leaves in XDG_RUNTIME_DIR.
func closedAbove(err error) (dir string, owner int, mode fs.FileMode) {
	var pe *control.PrivateDirError
	if !errors.As(err, &pe) || pe.Problem != control.ProblemUnreadable || !errors.Is(err, fs.ErrPermission) {
		return "", 0, 0
	}
	for child := pe.Dir; ; {
		up := filepath.Dir(child)
		if up == child {
			return "", 0, 0
		}
		fi, err := os.Stat(up)
		if err == nil {
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok {
				return "", 0, 0
			}
			return up, int(st.Uid), fi.Mode().Perm()
		}
		if !errors.Is(err, fs.ErrPermission) {
			return "", 0, 0
		}
		child = up
	}
}

func registryRow(d Input) Row {
	row := func(status, detail, fix string) Row {
		return Row{Name: "registry", Status: status, Detail: detail, Fix: fix}
	}
	reg := control.PaneRegistry(d.Paths.RuntimeBase)
	entries, err := reg.Entries()
	if err != nil {
		return row(Fail, "the pane registry "+privateDirProblem(err)+": pane hooks cannot find their wrapper", privateDirFix(err, runtimeVar, d.Env))
	}
	var live, stale, broken []string
	var files []string // as words of the rm the fix offers
	for _, e := range entries {
		switch {
		case e.Err != nil:
			broken = append(broken, e.File)
			files = append(files, shellword.Word(e.File))
		case e.Alive:
			live = append(live, fmt.Sprintf("pane %s (pid %d)", osc.CleanLabel(e.Endpoint.PaneID), e.Endpoint.PID))
		default:
			stale = append(stale, fmt.Sprintf("pane %s (pid %d, started %s)", osc.CleanLabel(e.Endpoint.PaneID), e.Endpoint.PID, startedAt(e.Endpoint)))
			files = append(files, shellword.Word(e.File))
		}
	}
	summary := "no wrapper is registered for a Herdr pane"
	if len(live) > 0 {
		summary = fmt.Sprintf("%s registered: %s", Plural(len(live), "running wrapper"), strings.Join(live, ", "))
	}
	if len(stale)+len(broken) == 0 {
		return row(OK, summary, "")
	}
	var parts []string
	if len(stale) > 0 {
		parts = append(parts, fmt.Sprintf("%s of wrappers that are gone without cleaning up: %s; Herdr may still show their last state in those panes",
			Plural(len(stale), "stale entry"), strings.Join(stale, ", ")))
	}
	if len(broken) > 0 {
		parts = append(parts, fmt.Sprintf("%s that cannot be read: %s", Plural(len(broken), "entry"), strings.Join(broken, ", ")))
	}
	return row(Warn, summary+"; "+strings.Join(parts, "; "),
		"nothing needs doing: the next 'herdr-pi wrap' removes stale entries (and a pane whose state looks stuck clears when herdr-pi runs there again); to remove them now: rm "+strings.Join(files, " "))
}

func startedAt(e control.Endpoint) string {
	if e.Started.IsZero() {
		return "at an unknown time"
	}
	return e.Started.Local().Format("2006-01-02 15:04:05")
}

// notThere is unmakeable's reason for a parent that does not exist.
const notThere = "does not exist"

// unmakeable says why dir, which does not exist yet, cannot be made by
// this user: the directory above it in the way and why (at, why), or "",
// "" when it can. The runtime directory is made alone (os.Mkdir: parents
// true is false), so its parent must exist, as an XDG_RUNTIME_DIR left
// over from another login or container does not; the log's is made with
// its parents (os.MkdirAll), so the nearest directory above it that
// exists must let us write. A file in the way is fileOnTheWay's case.
func unmakeable(dir string, parents bool) (at, why string) {
	at = filepath.Dir(dir)
	for {
		_, err := os.Stat(at)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return at, "cannot be checked: " + err.Error()
		}
		if !parents {
			return at, notThere
		}
		up := filepath.Dir(at)
		if up == at {
			return "", ""
		}
		at = up
	}
	if unix.Access(at, unix.W_OK|unix.X_OK) != nil {
		return at, fmt.Sprintf("is not writable for uid %d", os.Getuid())
	}
	return "", ""
}
