package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/herdr-pi/herdr-pi/settings"
)

// chosenBy is the environment variable that chose a path doctor reports
// on, when one did: a path nobody would create a file at (/dev/null, a
// typo) is then the variable's mistake, and the fix is to change it, not
// to make, move or remove files there.
type chosenBy struct {
	// Var is the variable (HERDR_PI_CONFIG), "" when the path is herdr-pi's
	// or Pi's default.
	Var string
	// Path is the path it names.
	Path string
	// Want is what it should name ("your config file").
	Want string
	// Unset is what applies without it.
	Unset string
}

// fix is the way out of the variable leading somewhere wrong.
func (c chosenBy) fix() string {
	return fmt.Sprintf("point %s at %s, or unset it (%s)", c.Var, c.Want, c.Unset)
}

// covers reports whether the variable's path is culprit or lies below it:
// then the variable is what leads to it.
func (c chosenBy) covers(culprit string) bool {
	if c.Var == "" {
		return false
	}
	rel, err := filepath.Rel(culprit, c.Path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// leadsTo says how the variable leads to culprit.
func (c chosenBy) leadsTo(culprit string) string {
	if culprit == c.Path {
		return fmt.Sprintf("%s names %s", c.Var, culprit)
	}
	return fmt.Sprintf("%s leads through %s", c.Var, culprit)
}

// configChosenBy says whether HERDR_PI_CONFIG chose config.toml.
func configChosenBy(paths settings.Paths) chosenBy {
	if !paths.ConfigNamed {
		return chosenBy{}
	}
	return chosenBy{Var: "HERDR_PI_CONFIG", Path: paths.ConfigFile, Want: "your config file",
		Unset: "herdr-pi then reads " + paths.Pretty(filepath.Join(paths.ConfigDir, "config.toml"))}
}

// piDirChosenBy says whether PI_CODING_AGENT_DIR chose Pi's agent
// directory, under which are Pi's files and its extensions' configs.
func piDirChosenBy(paths settings.Paths) chosenBy {
	if !paths.PiAgentDirNamed {
		return chosenBy{}
	}
	return chosenBy{Var: "PI_CODING_AGENT_DIR", Path: paths.PiAgentDir, Want: "Pi's agent directory", Unset: "Pi then uses ~/.pi/agent"}
}

// unreadableFix is the way out of a settings file that could not be read
// as a whole (nothing in it can be wrong yet): its permissions, who owns
// or may write it (a file that steers herdr-pi), a symlink
// that leads nowhere, something else where one of its directories should
// be, or the file itself not being a regular UTF-8 file of at most 1 MiB.
// format is "TOML" or "JSON"; by is the variable that chose the path, if
// any.
func unreadableFix(err error, paths settings.Paths, file, format string, by chosenBy) string {
	shown := paths.Pretty(file)
	switch {
	case errors.Is(err, fs.ErrPermission):
		// The reader judged what refused it, as the user it ran as; the
		// detail says the same words.
		if fe := (*settings.FileError)(nil); errors.As(err, &fe) && fe.Fix != "" {
			return fe.Fix
		}
		return settings.ReadPermissionFix(file, "the user running herdr-pi")
	case errors.Is(err, settings.ErrNotOurs):
		// A file of another user, or one anyone may write: its content
		// is not in question, who may change it is.
		if fe := (*settings.FileError)(nil); errors.As(err, &fe) && fe.Fix != "" {
			return fe.Fix
		}
	case errors.Is(err, settings.ErrBrokenLink):
		if link, target := settings.BrokenLink(file); link != "" {
			return brokenLinkFix(paths, file, link, target, by)
		}
	case errors.Is(err, syscall.ELOOP):
		return fmt.Sprintf("%s leads through a symlink loop: see where each link there leads with `ls -l`, then point the loop's link at a real directory or file, or remove it", shown)
	case errors.Is(err, syscall.ENOTDIR):
		culprit := settings.FileOnTheWay(file)
		switch {
		case culprit == "":
		case by.covers(culprit):
			return fmt.Sprintf("%s, which is not a directory: %s", by.leadsTo(culprit), by.fix())
		default:
			return fmt.Sprintf("move %s away or rename it: it is a file where %s needs a directory", paths.Pretty(culprit), shown)
		}
	}
	if by.Var != "" && by.Path == file {
		if fi, err := os.Stat(file); err == nil && !fi.Mode().IsRegular() {
			// /dev/zero, a FIFO, a directory: nothing to make of it.
			return fmt.Sprintf("%s, which is not a regular file: %s", by.leadsTo(file), by.fix())
		}
		return fmt.Sprintf("make %s a UTF-8 %s file of at most 1 MiB, or %s", shown, format, by.fix())
	}
	return fmt.Sprintf("make %s a regular UTF-8 %s file of at most 1 MiB, or remove it", shown, format)
}

// brokenLinkFix is the way out of a symlink on the way to file that leads
// nowhere.
func brokenLinkFix(paths settings.Paths, file, link, target string, by chosenBy) string {
	want := "directory"
	if link == file {
		want = "file"
	}
	out := fmt.Sprintf("point the symlink %s at an existing %s (it leads to %s, which does not exist), or remove it", paths.Pretty(link), want, target)
	if by.covers(link) {
		out += "; or " + by.fix()
	}
	return out
}
