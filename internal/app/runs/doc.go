// Package runs builds every agent run the same way, whoever asks (the
// native host's run-agent, the viewer's /ws, `nmhost run`, a workflow's
// task): it resolves the agent, its module and its session, binds the
// page, and decides the run's durability and how its log calls are
// recorded (the host's settings, and what the agent's profile asks on
// top), so entry points only say who asks and where the output goes. The
// run's output events are coalesced (output.go).
package runs
