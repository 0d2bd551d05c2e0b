package reconciler

// SetHoldForTest makes every goroutine of r call hold with the name of the
// hold point it reached (holds.go), before r runs. Tests only.
func SetHoldForTest[Obj any](r *Reconciler[Obj], hold func(point string)) {
	r.hold = func(p holdPoint) { hold(p.String()) }
}
