package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
)

// ErrPluginPanic is the error recorded when a plugin panics in a step: the request
// is answered as if the plugin had returned an error.
var ErrPluginPanic = errors.New("plugin: the plugin panicked")

// pluginFailure is a plugin's error in a step, with the plugin that returned it.
type pluginFailure struct {
	inst *instance
	step string
	err  error
}

func (e *pluginFailure) Error() string {
	return fmt.Sprintf("plugin: %s (%s) failed in %s: %v", e.inst.kind, e.inst.path, e.step, e.err)
}

func (e *pluginFailure) Unwrap() error { return e.err }

// recovered turns a panic value into an error, logging the stack.
func (st *state) recovered(inst *instance, step string, v any) error {
	st.logger().Error("plugin panicked", "plugin", inst.kind, "step", step, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return fmt.Errorf("%w: %v", ErrPluginPanic, v)
}

// Step names, for logs and errors.
const (
	stepPreRoute       = "pre_route"
	stepValidateAccess = "validate_access"
)

// callStep runs a pre-route or access step, turning a panic into an error.
func callStep(st *state, inst *instance, step string) (a *Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			a, err = nil, st.recovered(inst, step, v)
		}
	}()
	if step == stepPreRoute {
		return inst.pre.PreRoute(&st.ex)
	}
	return inst.access.ValidateAccess(&st.ex)
}

func callDial(st *state, inst *instance, dialErr error) (act DialAction, a *Answer) {
	defer func() {
		if v := recover(); v != nil {
			_ = st.recovered(inst, "dial_failure", v)
			act, a = DialPass, nil // the usual 502 follows
		}
	}()
	return inst.dial.HandleDialFailure(&st.ex, dialErr)
}

func callRequestTransformer(st *state, inst *instance, out *http.Request) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = st.recovered(inst, "transform_request", v)
		}
	}()
	return inst.reqT.TransformRequest(&st.ex, out)
}

func callResponseTransformer(st *state, inst *instance, res *http.Response) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = st.recovered(inst, "transform_response", v)
		}
	}()
	return inst.respT.TransformResponse(&st.ex, res)
}

// transformRequest runs the request transformers; a failure is returned as a
// *pluginFailure.
func (st *state) transformRequest(out *http.Request) *pluginFailure {
	for _, inst := range st.ex.Route.reqT {
		if !st.appliesTo(inst) {
			continue
		}
		if err := callRequestTransformer(st, inst, out); err != nil {
			return &pluginFailure{inst: inst, step: "transform_request", err: err}
		}
	}
	return nil
}

// transformResponse runs the response transformers.
func (st *state) transformResponse(res *http.Response) error {
	for _, inst := range st.ex.Route.respT {
		if !st.appliesTo(inst) {
			continue
		}
		if err := callResponseTransformer(st, inst, res); err != nil {
			return &pluginFailure{inst: inst, step: "transform_response", err: err}
		}
	}
	return nil
}
