package reconciler

// SetHoldForTest makes every goroutine of r call hold with the name of the
// hold point it reached (holds.go) and who it is (a worker's number, -1
// for the loop, -2 for the committer), before r runs. Tests only.
func SetHoldForTest[Obj any](r *Reconciler[Obj], hold func(point string, who int)) {
	r.hold = func(p holdPoint, who int) { hold(p.String(), who) }
}
