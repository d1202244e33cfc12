// Package runs builds every agent run the same way, whoever asks (the
// native host's run-agent, the viewer's /ws, `nmhost run`, a workflow's
// task): it resolves the agent, its module and its session, binds the
// page, and decides the run's durability, so entry points only say who
// asks and where the output goes.
package runs
