package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herdr-pi/herdr-pi/internal/guard"
	"github.com/herdr-pi/herdr-pi/notify/board"
	"github.com/herdr-pi/herdr-pi/notify/osc"
)

// Board is where the wrappers of one person leave the questions Herdr has
// not shown yet ([board.Board]).
type Board interface {
	// HoldNews puts a question, or a run's end, from place on the board
	// and returns its entry.
	HoldNews(kind board.Kind, place string) string
	// Others are the entries other wrappers hold, oldest first.
	Others() []board.Held
	// Told marks others' entries as named by a toast Herdr showed.
	Told(entries []string)
	// Taken reports whether another wrapper's toast named entry.
	Taken(entry string) bool
	// Drop takes entry off the board.
	Drop(entry string)
}

// Roster says which other wrappers run in the same Herdr ([board.Board]).
type Roster interface {
	// Namesakes counts the others known by place ([PaneName]).
	Namesakes(place string) int
}

// OutcomeToldWithOthers is the Herdr channel's outcome for a question, or a
// run's end, that another pane's toast named while Herdr held this pane's
// own back.
const OutcomeToldWithOthers = "told_with_others"

// Options are the channels a Notifier uses and what it says in them. A nil
// channel is off.
type Options struct {
	// Herdr is the channel inside a complete Herdr environment.
	Herdr Herdr
	// Barrier, when set, is waited on (for at most barrierWait) before each
	// Herdr toast, so Herdr shows the state before the toast about it.
	Barrier Barrier
	// Board, when set, is shared with the other wrappers of the person
	// (notify/board): a question or a run's end Herdr holds back ("not
	// now") is put on it, and a toast of either that Herdr shows names the
	// others held there, questions first, so one toast a second tells of
	// every pane that asks or ended its run.
	Board Board
	// Where, when set, says where the pane is in Herdr in words a person
	// finds it by ("tab 2"); a toast ends with it only while another
	// wrapper in the Roster has the same label or project, whose toast
	// would otherwise read the same.
	Where func(ctx context.Context) string
	// Roster, with Where, says when another pane has this one's name.
	Roster Roster
	// Sound is Herdr's toast sound: none (the default), done or request.
	Sound string
	// Terminal is the channel outside Herdr; set it only when the agent runs
	// in its TUI mode, where the person watches that terminal.
	Terminal *Terminal
	// Ntfy pushes to a phone or another machine.
	Ntfy *Ntfy
	// AgentName is how titles name the agent ("Pi" when empty).
	AgentName string
	// Project names where it happened (the working directory's base name).
	Project string
	// Label names this agent among the person's others when they share a
	// project — `wrap --label`, or the title `herdr-pi open` gave the pane
	// ("fx-retry #2 fixer"). It leads the body of every event that has no
	// label of its own: Herdr's toast says nothing of the pane it came
	// from, so three workflow agents in one project would all say "Pi
	// needs your input · api".
	Label string
	// Instance tells this agent's notifications from other agents' (for
	// example the Herdr pane id or the wrapper's pid), so one never
	// replaces another.
	Instance string
	// Logf receives failures and recoveries, once per streak. It must not
	// write to the agent's terminal.
	Logf func(format string, args ...any)
}

// Herdr's limit on notification.show: one shown per second, measured from
// the last one shown (herdr-socket-api.md §4.6).
const herdrPace = time.Second

// herdrRetryFor bounds how long one notification is offered to Herdr again,
// one pace apart, while it answers "not now" (rate_limited: another pane's
// toast took the second; busy: a toast is still on screen). The last news
// must not be lost to a toast that happens to be showing.
const herdrRetryFor = 30 * time.Second

// herdrRetryLate is how often a question Herdr still holds back after
// herdrRetryFor is offered again while it is open and on the board: it is
// not given up, since no other pane may toast to name it.
const herdrRetryLate = 5 * time.Second

// whereWait bounds the look-up of where the pane is: a toast without it
// beats a late one.
const whereWait = time.Second

// barrierWait bounds how long a toast waits for the state report before
// it goes anyway: a late toast is better than none.
const barrierWait = 2 * time.Second

// callTimeout bounds one call to Herdr: the socket is local, and a Herdr
// that does not answer must not hold the channel.
const callTimeout = 5 * time.Second

// seenLimit bounds the memory of keys already announced.
const seenLimit = 1024

// Notifier sends each event to every configured channel. Each channel has
// its own goroutine holding a queue of one: a newer notification replaces
// one not yet sent, so a slow or failing channel delays only itself and
// always ends up delivering the latest news. Notify never blocks.
type Notifier struct {
	agent, project, label, instance string
	logf                            func(string, ...any)

	mu sync.Mutex
	// session is the session's display name, as last heard.
	session string
	seen    map[string]struct{}
	order   []string
	// seq numbers the messages offered.
	seq uint64
	// answeredUpTo is the seq of the last message offered before the
	// agent was last unblocked: a question up to it is answered, off the
	// board and no longer ahead of news.
	answeredUpTo atomic.Uint64
	// closed is set by Close; later events are dropped.
	closed bool

	workers []*worker
	// unhold takes this wrapper's question off the board: once the
	// workers are done, or once it was answered.
	unhold   func()
	draining chan struct{}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Start builds a Notifier and starts one goroutine per channel. The
// Notifier owns them: Close stops them and waits.
func Start(o Options) *Notifier {
	n := &Notifier{
		agent: o.AgentName, project: o.Project, label: o.Label, instance: o.Instance, logf: o.Logf,
		seen: map[string]struct{}{}, draining: make(chan struct{}), unhold: func() {},
	}
	if n.logf == nil {
		n.logf = func(string, ...any) {}
	}
	if o.Herdr != nil {
		h, sound, barrier, where, roster := o.Herdr, o.Sound, o.Barrier, o.Where, o.Roster
		hb := &heldOn{board: o.Board, isAnswered: n.answered}
		n.unhold = hb.drop
		// whereFor is where the pane was when the message m.seq was first
		// offered: a toast Herdr holds back is offered again every second,
		// and asking Herdr again each time (two requests) adds to the load
		// that held it back. Only this worker's goroutine reads it.
		var whereFor struct {
			seq   uint64
			asked bool
			at    string
		}
		w := newWorker("herdr", herdrPace, herdrRetryFor, func(ctx context.Context, m Message) (string, bool, error) {
			if hb.taken(m) {
				return OutcomeToldWithOthers, false, nil
			}
			if barrier != nil {
				bctx, cancel := context.WithTimeout(ctx, barrierWait)
				err := barrier.Reported(bctx)
				cancel()
				if err != nil && ctx.Err() == nil {
					n.logf("notify: the toast goes before the state report reached Herdr: %v", err)
				}
			}
			ctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			if where != nil && roster != nil && roster.Namesakes(PaneName(o.Label, o.Project)) > 0 {
				if !whereFor.asked || whereFor.seq != m.seq {
					wctx, cancel := context.WithTimeout(ctx, whereWait)
					whereFor.seq, whereFor.asked, whereFor.at = m.seq, true, osc.CleanLabel(where(wctx))
					cancel()
				}
				if w := whereFor.at; w != "" {
					m.Body = joinParts(m.Body, w)
					// Named in another pane's toast, it says where too:
					// "also asking: api" would read as the namesake asking.
					m.place += " (" + w + ")"
				}
			}
			toast := herdrToast(m, sound)
			named := hb.nameOthers(m, &toast)
			res, err := h.ShowNotification(ctx, toast)
			if err != nil {
				hb.drop()
				return "", false, err
			}
			hb.answered(m, res.Reason, named)
			return res.Reason, retryable(res.Reason), nil
		})
		w.keep, w.late, w.gaveUp = hb.holds, herdrRetryLate, hb.gaveUp
		n.workers = append(n.workers, w)
	}
	if o.Terminal != nil {
		t := o.Terminal
		// why is the worker's own: written by its send, read by its record.
		var why string
		w := newWorker("terminal", 0, 0, func(ctx context.Context, m Message) (string, bool, error) {
			outcome, reason, err := t.Deliver(ctx, m)
			why = reason
			return outcome, false, err
		})
		w.explain = func() string { return why }
		n.workers = append(n.workers, w)
	}
	if o.Ntfy != nil {
		ny := o.Ntfy
		n.workers = append(n.workers, newWorker("ntfy", 0, 0, func(ctx context.Context, m Message) (string, bool, error) {
			return "posted", false, ny.Send(ctx, m)
		}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, w := range n.workers {
		w.stale = n.answered
		// Each send is guarded where it is made (see run); this covers the
		// loop around it, so a panic there ends one channel, never the
		// wrapper, and Close still finds the worker done.
		guard.Go(&n.wg, n.logf, "notify: the "+w.name+" channel", "it sends nothing more in this run; the other channels go on", func() {
			w.run(ctx, n.draining, n.logf)
		})
	}
	return n
}

// Notify announces ev on every channel, without waiting for any of them.
// An event whose Kind and Key were already announced, and not [Resolved]
// since, is a duplicate and says nothing.
func (n *Notifier) Notify(ev Event) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	if ev.Key != "" {
		k := dedupKey(ev)
		if _, dup := n.seen[k]; dup {
			n.mu.Unlock()
			return
		}
		n.seen[k] = struct{}{}
		n.order = append(n.order, k)
		if len(n.order) > seenLimit {
			delete(n.seen, n.order[0])
			n.order = n.order[1:]
		}
	}
	session := n.session
	n.seq++
	seq := n.seq
	n.mu.Unlock()
	if ev.Label == "" {
		ev.Label = n.label
	}
	m := compose(ev, n.agent, n.project, session, n.instance)
	m.seq, m.place = seq, PaneName(n.label, n.project)
	for _, w := range n.workers {
		w.offer(m)
	}
}

// SetSessionName records the session's display name (Pi's /name; "" for
// none), which ends the body of the notifications that follow.
func (n *Notifier) SetSessionName(name string) {
	n.mu.Lock()
	n.session = name
	n.mu.Unlock()
}

// Post sends a message already in words — a hook's own title and body —
// on every channel, without de-duplication. Channels sanitise it as they
// do every message.
func (n *Notifier) Post(m Message) {
	n.mu.Lock()
	closed := n.closed
	n.seq++
	m.seq = n.seq
	n.mu.Unlock()
	if closed {
		return
	}
	for _, w := range n.workers {
		w.offer(m)
	}
}

// Unblocked says the agent waits for the person no more: every question
// told so far is answered, so one a channel still holds back (Herdr's
// pace) comes off the board and no longer goes before news; it is still
// sent, once the channel lets it (the last blocked spell is always told).
func (n *Notifier) Unblocked() {
	n.mu.Lock()
	seq := n.seq
	n.mu.Unlock()
	n.answeredUpTo.Store(seq)
	n.unhold()
}

// answered reports whether m is a question the agent no longer waits on.
func (n *Notifier) answered(m Message) bool {
	return m.blocking && m.seq <= n.answeredUpTo.Load()
}

// Resolved says the thing ev was about is over (the ask was answered, the
// prompt decided, the wait cleared): a later event with the same Kind and
// Key announces again.
func (n *Notifier) Resolved(ev Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.seen, dedupKey(ev))
}

func dedupKey(ev Event) string { return ev.Kind.String() + "\x00" + ev.Key }

// Close stops accepting events, lets each channel deliver what it still
// holds until ctx is done, then cancels what is in flight and waits for
// every goroutine. It is safe to call more than once.
func (n *Notifier) Close(ctx context.Context) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.wg.Wait()
		return
	}
	n.closed = true
	n.mu.Unlock()
	close(n.draining)
	done := make(chan struct{})
	go func() { // owned here: it ends when the workers end, which is awaited below
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		n.cancel()
		<-done
	}
	n.cancel()
	n.unhold()
}

// ChannelStatus is what one channel did so far.
type ChannelStatus struct {
	Channel string
	// Sent counts calls that reached the channel (for Herdr, whatever it
	// answered); Failed counts errors.
	Sent, Failed int
	// Last is the latest outcome: Herdr's reason ("shown", "disabled", …),
	// "written", "posted", or the error.
	Last string
	// Failing says the latest send failed (Last is its error).
	Failing bool
	// Hint says, when the latest outcome kept the notification from the
	// person, why and what to change (the config key, Herdr's setting);
	// empty when nothing needs doing or nothing more is known.
	Hint string
}

// Status reports every channel, in the order Herdr, terminal, ntfy.
func (n *Notifier) Status() []ChannelStatus {
	out := make([]ChannelStatus, len(n.workers))
	for i, w := range n.workers {
		out[i] = w.status()
	}
	return out
}

// errSendPanicked is the outcome of a send that panicked (logged with its
// stack where it was recovered).
var errSendPanicked = errors.New("the send panicked (a bug in herdr-pi; see the log)")

// sendFunc delivers one message; retry asks to offer it again later.
type sendFunc func(ctx context.Context, m Message) (outcome string, retry bool, err error)

type pending struct {
	m Message
	// first is when it was first offered to the channel.
	first time.Time
	// after, once retryFor has passed for a message kept on offer, is
	// when it is offered next.
	after time.Time
}

type worker struct {
	name string
	pace time.Duration
	// retryFor is how long a message answered "not now" is offered again
	// (0: never).
	retryFor time.Duration
	send     sendFunc
	wake     chan struct{}
	// stale says a message is a question answered since: it is still
	// sent (the last blocked spell is always told, a second or so late
	// under Herdr's pace), but it no longer keeps its place before news,
	// and the board does not name it.
	stale func(Message) bool
	// keep, when set, says a message answered "not now" is offered again
	// past retryFor, every late, until the channel closes.
	keep func(Message) bool
	late time.Duration
	// gaveUp, when set, hears of a message given up (offered for
	// retryFor, and not kept).
	gaveUp func(Message)
	// explain, when set, says why the send that just got through did not
	// reach the person as asked (the terminal's bell under tmux), or "".
	explain func() string

	mu   sync.Mutex
	next *pending
	// behind is news (a run's end, a hook's post) that came while next
	// is a question still open: it goes once the question went or was
	// answered, never in its place. Set only while next is such a
	// question.
	behind  *pending
	st      ChannelStatus
	failing bool
}

func newWorker(name string, pace, retryFor time.Duration, send sendFunc) *worker {
	return &worker{name: name, pace: pace, retryFor: retryFor, send: send, wake: make(chan struct{}, 1), st: ChannelStatus{Channel: name}}
}

// offer replaces the unsent message, if any, with m — which then counts it
// and what it had merged — and wakes the worker.
func (w *worker) offer(m Message) {
	w.mu.Lock()
	switch {
	case w.next != nil && w.outranks(w.next.m, m):
		// The person still has to answer: the question keeps its place
		// (the pane stays blocked, and a toast of the news would leave
		// the question to "+1 more"), and the news waits behind it.
		if w.behind != nil {
			m.Merged += w.behind.m.Merged + 1
		}
		w.behind = &pending{m: m}
	default:
		if w.next != nil {
			m.Merged += w.next.m.Merged + 1
		}
		if w.behind != nil && !m.blocking {
			m.Merged += w.behind.m.Merged + 1
			w.behind = nil
		}
		w.next = &pending{m: m}
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) take() *pending {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.next
	w.next, w.behind = w.behind, nil
	return p
}

// outranks reports whether q, waiting, keeps its place before news: q is a
// question not answered yet, and news is not one.
func (w *worker) outranks(q, news Message) bool {
	return q.blocking && !news.blocking && (w.stale == nil || !w.stale(q))
}

func (w *worker) waiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next != nil
}

// nextAfter is when the waiting message may go, zero for at once.
func (w *worker) nextAfter() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next == nil {
		return time.Time{}
	}
	return w.next.after
}

// dropLate forgets the waiting message when it is one kept on offer past
// retryFor: a closing channel does not wait for it.
func (w *worker) dropLate() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != nil && !w.next.after.IsZero() {
		w.next, w.behind = w.behind, nil
	}
}

// retry puts p back, or, when something newer arrived meanwhile, counts
// it as merged into that (unless p is a question still open and the newer
// one news: then p goes first).
func (w *worker) retry(p *pending) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next == nil {
		w.next = p
		return
	}
	if w.outranks(p.m, w.next.m) {
		// News came while the question was out: the question goes
		// first again (behind is empty, as next is no question).
		w.next, w.behind = p, w.next
		return
	}
	w.next.m.Merged += p.m.Merged + 1
}

func (w *worker) status() ChannelStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// run delivers messages until draining is closed and nothing is left, or
// ctx is cancelled. Between two sends it keeps the channel's pace; a
// message that arrives meanwhile replaces the waiting one, so the pace
// coalesces bursts instead of dropping the latest — except that news
// waits behind a question still open (see offer).
func (w *worker) run(ctx context.Context, draining <-chan struct{}, logf func(string, ...any)) {
	var earliest time.Time
	for {
		if !w.waiting() {
			select {
			case <-w.wake:
				continue
			case <-draining:
				if w.waiting() {
					continue
				}
				return
			case <-ctx.Done():
				return
			}
		}
		d := time.Until(earliest)
		after := w.nextAfter()
		if a := time.Until(after); a > d {
			d = a
		}
		if d > 0 {
			// A message kept on offer waits long: a newer one cuts the
			// wait short, and closing drops it.
			var wake <-chan struct{}
			var closing <-chan struct{}
			if !after.IsZero() {
				wake, closing = w.wake, draining
			}
			timer := time.NewTimer(d)
			select {
			case <-timer.C:
			case <-wake:
				timer.Stop()
				continue
			case <-closing:
				timer.Stop()
				w.dropLate()
				continue
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
		p := w.take()
		if p == nil {
			continue
		}
		if p.first.IsZero() {
			p.first = time.Now()
		}
		// A channel's send runs code that sees the agent's words (the
		// toast's, the terminal sequence's, ntfy's request): a panic there
		// costs this message, counted as a failure, and the channel goes
		// on with the next.
		var outcome string
		var again bool
		var err error
		if guard.Run(logf, "notify: the "+w.name+" channel's send", "this notification is lost; the channel goes on", func() {
			outcome, again, err = w.send(ctx, p.m)
		}) {
			outcome, again, err = "", false, errSendPanicked
		}
		if w.pace > 0 {
			earliest = time.Now().Add(w.pace)
		}
		w.record(outcome, err, logf)
		switch {
		case err != nil || !again:
		case time.Since(p.first) < w.retryFor:
			w.retry(p)
		case w.keep != nil && w.keep(p.m) && !isClosed(draining):
			if p.after.IsZero() {
				logf("notify: %s still holds back %q after %v of %q: offered again every %v while it is open", w.name, p.m.Title, w.retryFor, outcome, w.late)
			}
			p.after = time.Now().Add(w.late)
			w.retry(p)
		default:
			logf("notify: %s gave up on %q after %v of %q", w.name, p.m.Title, w.retryFor, outcome)
			if w.gaveUp != nil {
				w.gaveUp(p.m)
			}
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// record keeps the outcome and logs a failure once per streak, and the
// recovery that ends it.
func (w *worker) record(outcome string, err error, logf func(string, ...any)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.st.Failed++
		w.st.Last, w.st.Failing, w.st.Hint = err.Error(), true, hintOf(err)
		if !w.failing {
			logf("notify: %s channel failed: %s", w.name, withHint(err.Error(), w.st.Hint))
		}
		w.failing = true
		return
	}
	w.st.Sent++
	changed := w.st.Last != outcome
	w.st.Last, w.st.Failing, w.st.Hint = outcome, false, ""
	if w.failing {
		logf("notify: %s channel recovered", w.name)
		w.failing = false
	}
	if w.explain != nil {
		if why := w.explain(); why != "" {
			w.st.Hint = why
			if changed {
				logf("notify: the %s channel did not show the notification: %s", w.name, why)
			}
		}
	}
	if w.name == "herdr" && outcome != ReasonShown && outcome != OutcomeToldWithOthers {
		w.st.Hint = HerdrHint(outcome)
		if changed {
			logf("notify: Herdr did not show the notification (%s): %s", outcome, w.st.Hint)
		}
	}
}

// hintOf is what a channel's error says the person can do about it.
func hintOf(err error) string {
	var h interface{ Hint() string }
	if errors.As(err, &h) {
		return h.Hint()
	}
	return ""
}

// withHint appends a hint to a message, when there is one.
func withHint(msg, hint string) string {
	if hint == "" {
		return msg
	}
	return msg + " (" + hint + ")"
}

// Outcome is Last, followed by the hint in parentheses when there is one.
func (s ChannelStatus) Outcome() string { return withHint(s.Last, s.Hint) }

func (s ChannelStatus) String() string {
	return fmt.Sprintf("%s: %d sent, %d failed, last %q", s.Channel, s.Sent, s.Failed, s.Last)
}
