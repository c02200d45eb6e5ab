package main

// faultCase is one fault RELIABILITY.md promises to survive: what happens,
// what herdr-pi guarantees then, and the tests that fail when that
// guarantee breaks.
type faultCase struct {
	Fault     string
	Guarantee string
	Tests     []testRef
}

// testRef names a test: its package (relative to the module root) and its
// name as `go test -run` and -json name it (Top/sub for a subtest).
type testRef struct {
	Pkg  string
	Name string
}

// Every end-to-end fault test (e2e) of a wrapped agent runs the real
// binary under an outer pty and checks, besides what its case promises,
// the agent's exit code, the terminal mode afterwards, Herdr's release and
// what is left in the runtime directory and the process table. The
// workflow cases at the end (workflowCases) check their own promises.
var cases = append(wrapCases, workflowCases...)

var wrapCases = []faultCase{
	{
		Fault:     "Herdr missing: no socket, or a socket nobody listens on",
		Guarantee: "the agent runs and exits with its own code; nothing about Herdr on its screen while it runs, one line after it exits saying no state reached Herdr and why; one log line per kind of failure; terminal restored",
		Tests: []testRef{
			{"e2e", "TestScripts/herdr_broken"},
			{"e2e", "TestKeystrokeEchoWithBrokenHerdr"},
			{"bridge/herdr", "TestTransportFailures"},
		},
	},
	{
		Fault:     "Herdr slow: every answer late (within the client's deadlines)",
		Guarantee: "every state and the release still arrive in order; the agent is not slowed; toasts wait for their state report",
		Tests: []testRef{
			{"e2e", "TestFaultHerdrSlow"},
			{"e2e", "TestWrapToastsOnlyAfterTheBlockedReport"},
			{"bridge/herdr", "TestReportedReturnsOnceHerdrAnswered"},
		},
	},
	{
		Fault:     "Herdr too slow: a report read only after the wrapper gave up on it (both attempts) and sent the next state",
		Guarantee: "Herdr ignores the late report by its seq: the pane shows the newer state; the agent's code comes back and the pane is released",
		Tests: []testRef{
			{"e2e", "TestFaultHerdrReadsAReportTooLate"},
			{"internal/herdrtest", "TestRequestOfAClientThatGaveUp"},
		},
	},
	{
		Fault:     "Herdr hung: accepts and never answers",
		Guarantee: "no keystroke or output waits for it; each call ends at its deadline; the run ends in bounded time with the agent's code",
		Tests: []testRef{
			{"e2e", "TestScripts/herdr_broken"},
			{"e2e", "TestKeystrokeEchoWithBrokenHerdr"},
			{"bridge/herdr", "TestAHungHerdrHoldsACallForBothDeadlines"},
			{"bridge/herdr", "TestCloseDoesNotWaitForAHungHerdr"},
			{"bridge/herdr", "TestReleaseIsBoundedWhenHerdrHangs"},
			{"bridge/herdr", "TestReportNeverWaitsWhileARequestIsStuck"},
		},
	},
	{
		Fault:     "Herdr answers garbage, or closes the connection unanswered or mid-line (crashing or restarting mid-call)",
		Guarantee: "treated as a failed call: logged once, retried, never shown to the agent; the agent's code comes back; the error says which it was: a reply herdr-pi cannot decode points at the protocol versions, a dropped connection at a Herdr restarting or crashed",
		Tests: []testRef{
			{"e2e", "TestScripts/herdr_broken"},
			{"bridge/herdr", "TestTransportFailures"},
			{"bridge/herdr", "TestADroppedConnectionIsNotCalledAProtocolMismatch"},
		},
	},
	{
		Fault:     "Herdr restarts mid-run, after a short (1 s) and a long (35 s, past the 30 s back-off) outage",
		Guarantee: "`herdr-pi status` says Herdr is not reached meanwhile; the current state is reported again once Herdr answers, without waiting for a change; the pane is released at the end",
		Tests: []testRef{
			{"e2e", "TestFaultHerdrRestartsMidRun"},
			{"e2e", "TestWrapReportsAgainAfterHerdrHandoff"},
			{"bridge/herdr", "TestPresenceReportsWithinASecondOfHerdrComingBack"},
			{"bridge/herdr", "TestRestartedHerdrGetsTheCurrentState"},
			{"bridge/herdr", "TestWatcherReconnectsAndDeliversOnce"},
		},
	},
	{
		Fault:     "the agent crashes (killed by a signal, or gone at once)",
		Guarantee: "wrap exits 128+n (127 when not found); the terminal is restored; the pane is released with a seq above every report",
		Tests: []testRef{
			{"e2e", "TestScripts/herdr_release"},
			{"e2e", "TestScripts/wrap_signals"},
		},
	},
	{
		Fault:     "the agent ignores signals",
		Guarantee: "a signal to wrap is forwarded and the agent decides; when the terminal hangs up, an agent ignoring SIGHUP is killed after the grace",
		Tests: []testRef{
			{"e2e", "TestScripts/wrap_signals"},
		},
	},
	{
		Fault:     "the agent floods the terminal",
		Guarantee: "every byte arrives unchanged; the agent's code comes back; the pane is released",
		Tests: []testRef{
			{"e2e", "TestFaultChildFloods"},
			{"e2e", "TestPassthroughIsByteIdentical"},
		},
	},
	{
		Fault:     "the terminal is resized 100 times a second",
		Guarantee: "the agent runs on and ends up with the last size",
		Tests: []testRef{
			{"e2e", "TestFaultResizeStorm"},
		},
	},
	{
		Fault:     "the runtime directory is read-only, or full (no block, no inode)",
		Guarantee: "the agent runs without the control socket, said once on stderr; reports to Herdr go on; nothing is written there",
		Tests: []testRef{
			{"e2e", "TestFaultRuntimeDirUnusable"},
		},
	},
	{
		Fault:     "a wrapper runs for weeks under /tmp, which a cleaner ages (systemd-tmpfiles, tmpreaper, tmpwatch), or its run directory is removed by hand",
		Guarantee: "nothing of a live wrapper's run directory or registry entry is old to a cleaner: it holds a lock on the directory and sets their times hourly, and those of the ledger records of what is open for its pane, its handoffs and its runs' workspaces, so `herdr-pi close` and the run's next `open` still find them, and of its presence and questions on the toast board, so the other wrappers' toasts still name them; a dead pane's record is kept by no one and ages; a directory removed anyway is logged once, the agent runs on, and `status` says the wrapper runs and cannot be reached",
		Tests: []testRef{
			{"bridge/control", "TestSystemdTmpfilesAgingSparesALiveRunDirectory"},
			{"handoff", "TestSystemdTmpfilesAgingSparesTheRecordsOfAnOpenPane"},
			{"handoff/live", "TestSystemdTmpfilesAgingSparesTheWorkspaceOfARunBetweenTurns"},
			{"notify/board", "TestSystemdTmpfilesAgingSparesTheBoardOfALiveWrapper"},
			{"cmd/herdr-pi/commands", "TestWrapsFresheningKeepsItsLedgerRecordAndToastBoard"},
			{"bridge/control", "TestCleanersOfTmpSpareAFreshenedRun"},
			{"bridge/control", "TestCleanersOfTmpSpareTheRunDirectoryOfALiveHandoff"},
			{"bridge/control", "TestARunDirectoryRemovedFromUnderTheWrapperIsLoggedOnce"},
			{"e2e", "TestStatusSaysARemovedRunDirectoryIsNotAnExitedWrapper"},
		},
	},
	{
		Fault:     "the session file is truncated, or rewritten from scratch by another Pi",
		Guarantee: "the wrapper follows what the file says now: a sentinel that is gone no longer blocks, one written after the truncation does",
		Tests: []testRef{
			{"e2e", "TestFaultSessionFileTruncatedAndRewritten"},
			{"pane/session", "TestWatcherFollowsAppendsAndSwitches"},
		},
	},
	{
		Fault:     "the control socket is flooded, held open by 1000 silent clients, or by 400 that ask and never read the answers",
		Guarantee: "`herdr-pi status` and hooks' `waiting` still answer within their 5 s: a newcomer takes the place of the client idle the longest (after 25 ms, whether it read its answer or not), else, when no client is idle, of the connection that never said hello silent the longest (after 25 ms), else queues; no answer is waited on while others wait: a client with 8 KiB of answers unread has its next request read only once it reads them (a batch asked before reading is answered in full, in order), and counts as idle meanwhile; the wrapper holds at most 64 connections and is back to its descriptors and goroutines afterwards; the probe is never dropped, nor cut while its hello is slow among stuck clients; `herdr-pi open`'s handoff keeps its place from its hello on; bad input ends only its own connection",
		Tests: []testRef{
			{"e2e", "TestFaultControlSocketHeldBySilentClients"},
			{"e2e", "TestFaultControlSocketHeldByClientsThatNeverRead"},
			{"bridge/control", "TestStatusGetsThroughFourHundredClientsThatNeverRead"},
			{"bridge/control", "TestTheLongestIdleClientMakesRoomWhetherItReadItsAnswerOrNot"},
			{"bridge/control", "TestAClientThatAsksBeforeReadingIsAnswered"},
			{"bridge/control", "TestAClientThatPipelinesFiftyRequestsGetsEveryAnswerInOrder"},
			{"bridge/control", "TestAClientThatNeverReadsItsAnswersIsClosedAfterTheIdleTimeout"},
			{"bridge/control", "TestAnAnswerLargerThanTheSocketArrivesWhole"},
			{"bridge/control", "TestStatusGetsThroughAThousandSilentClients"},
			{"bridge/control", "TestStatusGetsThroughFourHundredAuthenticatedSilentClients"},
			{"bridge/control", "TestAProbeWithASlowHelloOutlastsAFloodOfAuthenticatedSilentClients"},
			{"bridge/control", "TestAProbeWithASlowHelloOutlastsAFloodOfClientsSlowToBeRead"},
			{"bridge/control", "TestStatusGetsThroughSixtyFourSilentClients"},
			{"bridge/control", "TestStatusGetsThroughSixtyFourIdleClients"},
			{"bridge/control", "TestAClientQueuesBehindProbesHoldingEveryPlace"},
			{"bridge/control", "TestAFloodOfConnectionsLeavesTheProbeAndStatusAlone"},
			{"bridge/control", "TestAHandoffAskerKeepsItsPlaceBetweenHelloAndAsk"},
			{"bridge/control", "TestDialHandoffKeepsItsPlace"},
			{"bridge/control", "TestBadInputIsRejectedAndLogged"},
		},
	},
	{
		Fault:     "a notification channel fails or hangs",
		Guarantee: "the state is still reported; nothing else waits for the channel; the agent's code comes back and the pane is released",
		Tests: []testRef{
			{"e2e", "TestFaultNotificationChannelHangs"},
			{"notify", "TestHungChannelBlocksNothingElse"},
			{"notify", "TestHerdrRetriesNotNowAndGivesUp"},
			{"notify", "TestNtfyFailuresReportedOnceNoRetry"},
		},
	},
	{
		Fault:     "a signal reaches the wrapper (SIGINT, SIGTERM, SIGHUP) while the agent runs, or after it ended while a hung Herdr holds the release",
		Guarantee: "while it runs the signal is the agent's (forwarded) and the wrapper exits with the agent's status; on the way out it is held, and the way out finishes with the agent's code; terminal restored, pane released, nothing left",
		Tests: []testRef{
			{"e2e", "TestFaultSignalWhileRunning"},
			{"e2e", "TestFaultSignalWhileShuttingDown"},
			{"e2e", "TestScripts/wrap_signals"},
		},
	},
	{
		Fault:     "the wrapper's terminal closes while the agent runs",
		Guarantee: "the agent is hung up and reaped; the pane is released; nothing left",
		Tests: []testRef{
			{"e2e", "TestFaultTerminalClosed"},
		},
	},
	{
		Fault:     "a hook or script that opened a wait (`herdr-pi waiting start --pid $$`) is killed, SIGKILL included",
		Guarantee: "the wrapper closes the wait as `waiting stop` would and the pane leaves blocked; `status` names the holder while it runs",
		Tests: []testRef{
			{"e2e", "TestAWaitEndsWhenItsHolderIsKilled"},
			{"bridge/control", "TestAWaitEndsWithTheProcessThatHoldsIt"},
		},
	},
	{
		Fault:     "a bug panics on one of the wrapper's goroutines (a state sink, the status reader, the shadow screen, the session-file watcher, a debounce timer, a notification channel, a handoff)",
		Guarantee: "the panic is logged with its stack and costs that event, call or watcher only, leaving no lock held; the agent and its terminal go on, and the way out still runs; no goroutine of the wrapper starts outside that guard",
		Tests: []testRef{
			{"pane/observe", "TestAPanicStaysInTheObserver"},
			{"pane/session", "TestWatcherPanicIsContained"},
			{"pane/state", "TestATimerPanicStaysInTheMachine"},
			{"notify", "TestAPanickingSendCostsOneNotification"},
			{"bridge/control", "TestAPanickingHandoffFailsThatHandoffOnly"},
			{"internal/guard", "TestEveryGoroutineIsGuarded"},
		},
	},
}

// workflowCases are the faults of `herdr-pi open` on a workflow's agents:
// a live handoff, or fully inspectable mode. Their end-to-end tests run a
// real owner (Pi with the workflow engine under `herdr-pi wrap`) and real
// Pis in the fake Herdr's tmux panes, and check, besides what the case
// promises, that the attempt comes back to its owner or open says plainly
// why not, and what is left in the private runtime directory.
var workflowCases = []faultCase{
	{
		Fault:     "the `herdr-pi open` that asked for a live handoff is SIGKILLed, while its order waits for the turn boundary or while the attempt works in its pane; or two opens share the handoff and the one that asked is killed",
		Guarantee: "the order is withdrawn and no pane opens, or the owner's wrapper gives the attempt back (aborted) and closes its pane; the owner carries the turn on locally; the other open says the asker went away and ends with the handback; nothing is left open for `herdr-pi close`",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffOpenKilledBeforeTheBoundary"},
			{"e2e", "TestLiveHandoffOpenKilled"},
			{"e2e", "TestLiveHandoffTwoOpensAtOnceTheAskerKilled"},
		},
	},
	{
		Fault:     "the `herdr-pi open` of a live handoff cannot write its lines (stdout is a full disk)",
		Guarantee: "open exits 1 with the write error; an open that asked gives the handoff up before any pane opens and the turn goes on in the owner; one that joined says the handoff goes on and how to give it back, and it does go on",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffOpenCannotWriteItsLines"},
			{"e2e", "TestLiveHandoffJoinedOpenCannotWriteItsLines"},
		},
	},
	{
		Fault:     "the handed-off pane's Pi, or its `herdr-pi wrap`, is SIGKILLed while the attempt works",
		Guarantee: "the attempt comes back at once and the owner carries the cut turn on locally; open exits 0 with the handback; what the killed wrapper left is reclaimed by the next wrapper's start",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffPanesPiKilled"},
			{"e2e", "TestLiveHandoffPanesWrapperKilled"},
		},
	},
	{
		Fault:     "the owner of a live handoff or of a fully inspectable run is SIGKILLed: its Pi, or its `herdr-pi wrap` (while the handoff is ordered, or while the pane or tab works)",
		Guarantee: "open exits 1 saying the owner is gone and the way on (the pane that still runs and the `herdr-pi close` that closes it, or the open that opens what it left); close closes what was left; the next open of the attempt opens what it left, a read-only fork, saying the owner is gone; an inspectable run's wrapper whose Pi died closes the tab and the workspace itself",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffOwnerKilledThenOpenAgain"},
			{"e2e", "TestLiveHandoffOwnerWrapperKilledWhileOrdered"},
			{"e2e", "TestLiveHandoffOwnerWrapperKilled"},
			{"e2e", "TestFullyInspectableOwnerPiKilled"},
			{"e2e", "TestFullyInspectableOwnerWrapperKilled"},
		},
	},
	{
		Fault:     "Herdr is down at a live handoff's launch, or drops the connection that types the pane's command",
		Guarantee: "the handoff fails: open exits 1 saying why (restart Herdr; the call that failed), a pane already placed is closed again, and the attempt goes on in its owner; nothing is left open",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffHerdrDownAtTheLaunch"},
			{"e2e", "TestLiveHandoffHerdrDropsTheLaunchsInput"},
		},
	},
	{
		Fault:     "Herdr crashes while a handed-off pane or an inspectable run's tab works, and restarts a few seconds later with its panes",
		Guarantee: "the wrapper follows the pane again: a turn that ended during the outage comes back (idle) with the pane's reply; a pane or tab closed after it hands back (closed) and the owner carries on; an inspectable run opens its next tab and closes its workspace at the end",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffTurnEndsDuringAHerdrOutage"},
			{"e2e", "TestLiveHandoffHerdrOutageThenPaneClosed"},
			{"e2e", "TestFullyInspectableHerdrOutageThenTabClosed"},
		},
	},
	{
		Fault:     "Herdr goes away for good, its panes with it, while a handed-off pane or an inspectable run's tab works",
		Guarantee: "the wrapper hands back (exited) at once and the owner finishes the turn locally; an inspectable run's next prompt fails for want of Herdr, and what Herdr could not close stays in herdr-pi's ledger for `herdr-pi close`",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffHerdrGoesAway"},
			{"e2e", "TestFullyInspectableHerdrGoesAway"},
		},
	},
	{
		Fault:     "Herdr is down, or refuses `pane.close`, at a live handoff's handback",
		Guarantee: "the wrapper stops the pane's Pi itself before the owner has the attempt back (never two Pis on one session file); the pane stays in herdr-pi's ledger, said at the handback, and `herdr-pi close` closes it once Herdr answers",
		Tests: []testRef{
			{"e2e", "TestLiveHandoffHerdrDownAtTheHandback"},
			{"e2e", "TestLiveHandoffPaneCloseFailsStillStopsThePanesPi"},
		},
	},
	{
		Fault:     "`herdr-pi close <run>` cuts a handoff short: while it is ordered, as its pane is launched, or while an inspectable run's turn works in its tab",
		Guarantee: "whichever comes first, the handoff ends with a handback that says what happened (open prints it), the attempt or turn is back with its owner, and no pane, tab or workspace stays open",
		Tests: []testRef{
			{"e2e", "TestCloseGivesUpAnOrderedHandoff"},
			{"e2e", "TestCloseRacesALiveHandoffsLaunch"},
			{"handoff", "TestAPlacementGivenUpWhileHerdrMakesItsPaneClosesIt"},
			{"e2e", "TestFullyInspectableCloseWhileTheRunWorks"},
		},
	},
}
