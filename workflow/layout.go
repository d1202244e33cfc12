package workflow

// Layout is a workflow's plan as it can be told before it runs: its
// logical layers, the physical layers they run as once adjacent pure
// steps are fused, and the physical layers with a task a person may have
// to approve (`nmhost workflow plan`).
type Layout struct {
	Layers         int           `json:"layers"`
	PhysicalLayers int           `json:"physicalLayers"`
	Fused          []Fused       `json:"fused,omitempty"`
	NeedsPerson    []PersonLayer `json:"needsPerson"`
}

// PersonLayer is a physical layer with side effects: its tool calls and
// calls, which a person approves unless the policy allows them without
// asking, and its agent runs, which may make such calls.
type PersonLayer struct {
	Layer int      `json:"layer"`
	Tasks []string `json:"tasks"`
}

// Plan lays a checked workflow out as Run would run it.
func Plan(s Spec) (Layout, error) {
	if err := s.Check(); err != nil {
		return Layout{}, err
	}
	layers, _ := s.layers()
	p := &plan{spec: s, layers: layers}
	out := Layout{Layers: len(layers), NeedsPerson: []PersonLayer{}}
	for n := 0; n < len(layers); {
		end := p.fusedEnd(n)
		out.PhysicalLayers++
		if end-n > 1 {
			out.Fused = append(out.Fused, p.fusion(out.PhysicalLayers, n, end))
			n = end
			continue
		}
		var tasks []string
		for _, i := range layers[n] {
			if t := s.Tasks[i]; t.Code == nil {
				tasks = append(tasks, t.ID)
			}
		}
		if len(tasks) > 0 {
			out.NeedsPerson = append(out.NeedsPerson, PersonLayer{Layer: out.PhysicalLayers, Tasks: tasks})
		}
		n++
	}
	return out, nil
}
