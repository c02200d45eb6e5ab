package notify

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// Message is one notification in words, before a channel sanitises and
// sizes it for its medium.
type Message struct {
	Title string
	Body  string
	// Question is the first line of what the agent asks, sanitised and cut
	// to questionLimit (see [Event.Question]); on-screen channels show it
	// before the body, ntfy leaves it out.
	Question string
	// Error is why a failed run stopped: [ErrorLine] of [Event.Error].
	// On-screen channels show it before the body, as the question.
	Error string
	// ErrorStatus is the HTTP status the error names ("429 Too Many
	// Requests"), or empty: fixed words, so ntfy, which leaves the Error
	// out, may send them.
	ErrorStatus string
	// ID names the notification for terminals that replace one with the
	// same id (OSC 99).
	ID string
	// Merged counts older notifications this one replaced before a channel
	// could show them (its pace, or "not now" answers); the channel says
	// "+n more" so none is lost without a trace.
	Merged int

	// blocking: the agent waits for the person (a question, a prompt); a
	// toast Herdr holds back for one is put on the [Board].
	blocking bool
	// kind is the event's kind; zero for a message posted in words (a
	// hook's), which the board leaves alone.
	kind Kind
	// place names the pane in the toasts of other panes ([PaneName]).
	place string
	// seq tells this message from the one that replaces it.
	seq uint64
}

// questionLimit is how much of a question a notification shows.
const questionLimit = 120

// QuestionLine is the first non-empty line of q, sanitised for a terminal
// or Herdr and cut to 120 code points with an ellipsis.
func QuestionLine(q string) string {
	for line := range strings.Lines(q) {
		if l := osc.CleanLabel(line); l != "" {
			return osc.Truncate(l, questionLimit)
		}
	}
	return ""
}

// more is what a channel adds for merged notifications.
func (m Message) more() string {
	if m.Merged <= 0 {
		return ""
	}
	return fmt.Sprintf("+%d more", m.Merged)
}

// screenBody is the body on-screen channels show, within limit code points
// after sanitising: the question, then the body, then how many were
// merged, which survives any cut.
func (m Message) screenBody(limit int) string {
	return fitWithMore(joinParts(m.Question, m.Error, osc.CleanLabel(m.Body)), m.more(), limit)
}

// fitWithMore cuts body to fit limit code points together with more.
func fitWithMore(body, more string, limit int) string {
	if more == "" {
		return osc.Truncate(body, limit)
	}
	if body == "" {
		return more
	}
	room := limit - utf8.RuneCountInString(partSep+more)
	return osc.Truncate(body, room) + partSep + more
}

const partSep = " · "

func joinParts(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, partSep)
}

// titles are fixed words after the agent's name: nothing the agent or the
// person typed reaches a title.
var titles = map[Kind]string{
	Finished:         "finished",
	Failed:           "stopped with an error",
	InputNeeded:      "needs your input",
	PermissionNeeded: "needs permission",
	AskStarted:       "has a question for you",
}

// DefaultAgentName names the agent in titles when Options.AgentName is
// empty.
const DefaultAgentName = "Pi"

// idPrefix gives each kind of notification its own OSC 99 id, so a newer
// one of the same kind from the same agent replaces the older one instead
// of piling up.
var idPrefix = map[Kind]string{
	Finished:         "pi",
	Failed:           "pi",
	InputNeeded:      "pi-ask",
	PermissionNeeded: "pi-permission",
	AskStarted:       "pi-ask",
}

// labelLimit keeps a label short enough to leave room for the project in
// Herdr's 240-code-point body.
const labelLimit = 60

// compose writes the message for ev, as said by agent (its display name).
// The body names where it happened — the label, the project (the working
// directory's base name), the session's name (Pi's /name), in pi-notify's
// order — and nothing else. instance is appended to the id so that two
// agents never replace each other's notification.
func compose(ev Event, agent, project, session, instance string) Message {
	parts := Place{Label: ev.Label, Project: project, Session: session}.parts()
	if agent = osc.CleanLabel(agent); agent == "" {
		agent = DefaultAgentName
	}
	title := agent
	if words, ok := titles[ev.Kind]; ok {
		title += " " + words
	}
	id := idPrefix[ev.Kind]
	if id == "" {
		id = "pi"
	}
	if instance != "" {
		id += "-" + instance
	}
	errLine, errStatus := describeError(ev.Error)
	return Message{Title: title, Body: strings.Join(parts, partSep), Question: QuestionLine(ev.Question),
		Error: errLine, ErrorStatus: errStatus, ID: osc.SanitizeIdentifier(id),
		blocking: ev.Kind.Blocking(), kind: ev.Kind}
}

// Place is where a notification comes from, as the body of the wrapper's
// own notifications names it: the pane's label, the project, the
// session's name.
type Place struct {
	Label, Project, Session string
}

// parts are p's names as a body shows them, in order: cleaned, the label
// and the session cut to labelLimit, empty ones left out.
func (p Place) parts() []string {
	var parts []string
	if l := osc.Truncate(osc.CleanLabel(p.Label), labelLimit); l != "" {
		parts = append(parts, l)
	}
	if pr := osc.CleanLabel(p.Project); pr != "" {
		parts = append(parts, pr)
	}
	if s := osc.Truncate(osc.CleanLabel(p.Session), labelLimit); s != "" {
		parts = append(parts, s)
	}
	return parts
}

// After is a hook's own body followed by the names of p that neither
// its title nor its body says already (as a whole word, in any case):
// Herdr's toast says nothing of the pane it came from, and a hook that
// wrote "api: tests passed" needs no second "api".
func (p Place) After(title, body string) string {
	said := strings.ToLower(title + "\n" + body)
	keep := []string{body}
	for _, part := range p.parts() {
		if !saysWord(said, strings.ToLower(part)) {
			keep = append(keep, part)
		}
	}
	return joinParts(keep...)
}

// saysWord reports whether text holds word with no letter or digit
// right before or after it ("api" is in "api: ok", not in "rapid").
func saysWord(text, word string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if !wordRune(before) && !wordRune(after) {
			return true
		}
		i = start + 1
	}
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// PaneName is what names a pane among the person's others: its label,
// else its project (the working directory's base name).
func PaneName(label, project string) string {
	if l := osc.Truncate(osc.CleanLabel(label), labelLimit); l != "" {
		return l
	}
	return osc.CleanLabel(project)
}
