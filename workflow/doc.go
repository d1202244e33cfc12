// Package workflow runs a graph of agent tasks layer by layer, with every
// task decided by the mediator before its layer runs and pure steps
// computed in CEL, which cannot have a side effect.
package workflow
