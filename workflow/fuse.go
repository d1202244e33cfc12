package workflow

import (
	"context"

	"github.com/agentgate/nmhost/mediator"
)

// Fused is one physical layer made of several logical layers of pure steps:
// the steps it ran, in order, and the operations they are named by, so a
// reader sees both the graph as written and what ran.
type Fused struct {
	// Layer is the physical layer's number; Logical its logical layers.
	Layer        int      `json:"layer"`
	Logical      []int    `json:"logicalLayers"`
	FusedFrom    []string `json:"fusedFrom"`
	LogicalTools []string `json:"logicalTools"`
}

// fusedEnd is where the physical layer starting at logical layer n ends
// (exclusive): past every adjacent layer of pure steps when n is one.
func (p *plan) fusedEnd(n int) int {
	end := n + 1
	for end < len(p.layers) && p.stepsOnly(n) && p.stepsOnly(end) {
		end++
	}
	return end
}

// fusion describes the physical layer made of logical layers [from, to).
func (p *plan) fusion(physical, from, to int) Fused {
	f := Fused{Layer: physical}
	for n := from; n < to; n++ {
		f.Logical = append(f.Logical, n+1)
		for _, i := range p.layers[n] {
			t := p.spec.Tasks[i]
			f.FusedFrom = append(f.FusedFrom, t.ID)
			f.LogicalTools = append(f.LogicalTools, t.Code.Op)
		}
	}
	return f
}

// stepsOnly reports whether layer n holds pure steps only.
func (p *plan) stepsOnly(n int) bool {
	for _, i := range p.layers[n] {
		if p.spec.Tasks[i].Code == nil {
			return false
		}
	}
	return true
}

// fused decides layers [from, to), all pure steps, in one call and then
// evaluates them in layer order. The decisions are the same a layer at a
// time would get (class:pure), each recorded with its own layer.
func (r *runner) fused(ctx context.Context, from, to int) error {
	var tasks []mediator.LayerTask
	var idx, layerOf []int
	for n := from; n < to; n++ {
		for _, i := range r.layers[n] {
			t := r.spec.Tasks[i]
			tasks = append(tasks, mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: t.Code.Op, Layer: n + 1}, Pure: true})
			idx, layerOf = append(idx, i), append(layerOf, n+1)
		}
	}
	decisions, err := r.env.Policy.AuthorizeLayer(ctx, r.spec.ID, from+1, tasks, nil)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if d := r.failedDep(i); d != "" {
			r.finish(i, layerOf[k], nil, decisions[k].Seq, mediator.Errorf(mediator.CodeDependencyFailed, "task %q did not succeed", d))
			continue
		}
		v, err := r.evalCode(ctx, i)
		r.finish(i, layerOf[k], v, decisions[k].Seq, err)
	}
	return nil
}
