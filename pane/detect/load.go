package detect

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/herdr-pi/herdr-pi/settings"
)

//go:embed manifests/*.toml
var embeddedFS embed.FS

var (
	embeddedOnce sync.Once
	embeddedSet  *Set
)

// Set is the manifests known to herdr-pi, looked up by agent id, alias or
// file name.
type Set struct {
	byName map[string]*Manifest
}

// Embedded returns the manifests built into herdr-pi. They are tested;
// one failing to parse is a bug, so it panics.
func Embedded() *Set {
	embeddedOnce.Do(func() {
		embeddedSet = &Set{byName: map[string]*Manifest{}}
		entries, err := fs.Glob(embeddedFS, "manifests/*.toml")
		if err != nil {
			panic(err)
		}
		for _, name := range entries {
			data, err := embeddedFS.ReadFile(name)
			if err != nil {
				panic(err)
			}
			m, err := Parse(data, "embedded "+filepath.Base(name))
			if err != nil {
				panic(fmt.Sprintf("detect: embedded manifest: %v", err))
			}
			embeddedSet.add(strings.TrimSuffix(filepath.Base(name), ".toml"), m)
		}
	})
	return embeddedSet
}

func (s *Set) add(fileBase string, m *Manifest) {
	for _, n := range append([]string{fileBase, m.ID}, m.Aliases...) {
		if n != "" {
			s.byName[n] = m
		}
	}
}

// Lookup finds the manifest for an agent id, alias or file name.
func (s *Set) Lookup(agent string) (*Manifest, bool) {
	m, ok := s.byName[agent]
	return m, ok
}

// Names lists every name the set answers to, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Load returns the embedded manifests overlaid with the user's
// <agent>.toml files from dir. A user manifest replaces the embedded one
// with the same name; one that does not parse is reported in the returned
// errors (file, line, reason) and the embedded manifest stays in use. A
// missing dir is not an error.
func Load(dir string) (*Set, []error) {
	base := Embedded()
	s := &Set{byName: make(map[string]*Manifest, len(base.byName))}
	for n, m := range base.byName {
		s.byName[n] = m
	}
	if dir == "" {
		return s, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return s, []error{err}
	}
	if len(files) == 0 {
		if err := manifestDirProblem(dir); err != nil {
			return s, []error{err}
		}
	}
	var problems []error
	for _, f := range files {
		data, err := settings.ReadOwnFile(f, settings.TOML)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, fileError(f, err))
			}
			continue
		}
		m, err := Parse(data, f)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		s.replace(base, strings.TrimSuffix(filepath.Base(f), ".toml"), m)
	}
	return s, problems
}

// replace adds a user's manifest. One that takes a built-in manifest's
// name replaces that manifest under every name it answered to (docs:
// "replaces the built-in manifest"): a pi.toml naming only "pi" must not
// leave herdr:pi and pi-coding-agent on the built-in rules.
func (s *Set) replace(builtIn *Set, fileBase string, m *Manifest) {
	for _, n := range append([]string{fileBase, m.ID}, m.Aliases...) {
		old, ok := builtIn.byName[n]
		if n == "" || !ok {
			continue
		}
		for name, cur := range s.byName {
			if cur == old {
				s.byName[name] = m
			}
		}
	}
	s.add(fileBase, m)
}

// manifestDirProblem is why dir holds no manifests when it is not simply
// missing or empty: a symlink that leads nowhere, or something that is not
// a directory. Either way the user meant manifests to be there, and a glob
// finds none without a word.
func manifestDirProblem(dir string) error {
	if link, target := settings.BrokenLink(dir); link != "" {
		what := "is"
		if link != dir {
			what = "cannot be read: " + link + " is"
		}
		return &ManifestError{File: dir, err: settings.ErrBrokenLink, Problems: []Problem{{
			Msg: fmt.Sprintf("%s a symlink to %s, which does not exist, so no manifest there is read; point it at an existing directory, or remove it", what, target)}}}
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return &ManifestError{File: dir, Problems: []Problem{{
			Msg: "is " + settings.FileKind(fi.Mode()) + ", not a directory, so no manifest there is read; put the manifests in a directory there"}}}
	}
	return nil
}

// LoadFile parses one manifest file.
func LoadFile(path string) (*Manifest, error) {
	data, err := settings.ReadFile(path, settings.TOML)
	if err != nil {
		return nil, fileError(path, err)
	}
	return Parse(data, path)
}

// fileError is a manifest that could not be read (a FIFO, too big, too
// deep: see settings.ReadFile) as a *ManifestError, like one that does
// not parse.
func fileError(file string, err error) error {
	p := Problem{Msg: err.Error()}
	var fe *settings.FileError
	if errors.As(err, &fe) {
		p.Line, p.Msg = fe.Line, fe.Reason
	}
	return &ManifestError{File: file, Problems: []Problem{p}, err: err}
}
