// Package buildinfo says which build of herdr-pi this binary is, for
// `--version` and for the hellos of the control socket (a command and a
// wrapper of different builds name both): one reading of the module's
// build info, and one stamp for the Makefile to set.
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// Release is set at build time with
// -ldflags "-X github.com/herdr-pi/herdr-pi/internal/buildinfo.Release=v1.2.3"
// (make build sets it from git describe); otherwise the module's version
// stands in.
var Release = ""

// Info is what this binary knows of its build.
type Info struct {
	// Version is the release, else the module's version, else "devel".
	Version string
	// Revision is the commit it was built from, cut to 12 characters
	// ("" when the build did not record one); Modified says the tree had
	// changes then; Time is the commit's time as recorded.
	Revision string
	Modified bool
	Time     string
}

// Read returns this binary's build, read once.
var Read = sync.OnceValue(func() Info {
	in := Info{Version: Release}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if in.Version == "" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			case "vcs.time":
				in.Time = s.Value
			}
		}
	}
	if in.Version == "" || in.Version == "(devel)" {
		in.Version = "devel"
	}
	if len(in.Revision) > 12 {
		in.Revision = in.Revision[:12]
	}
	return in
})
