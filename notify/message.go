package notify

import (
	"strings"

	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// Message is one notification in words, before a channel sanitises and
// sizes it for its medium.
type Message struct {
	Title string
	Body  string
	// ID names the notification for terminals that replace one with the
	// same id (OSC 99).
	ID string
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
// The body names where it happened — the label, then the project (the
// working directory's base name) — and nothing else. instance is appended
// to the id so that two agents never replace each other's notification.
func compose(ev Event, agent, project, instance string) Message {
	var parts []string
	if l := osc.Truncate(osc.CleanLabel(ev.Label), labelLimit); l != "" {
		parts = append(parts, l)
	}
	if p := osc.CleanLabel(project); p != "" {
		parts = append(parts, p)
	}
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
	return Message{Title: title, Body: strings.Join(parts, " · "), ID: osc.SanitizeIdentifier(id)}
}
