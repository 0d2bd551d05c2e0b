package strata

import "github.com/strata-db/strata/metrics"

// This file has cilium/statedb's names of the database's metrics, so that
// code written for statedb that only creates and passes them compiles
// unchanged. The figures differ: MIGRATING.md maps them.

// Metrics is metrics.Metrics, under statedb's name (statedb.Metrics; an
// implementation of statedb's is rewritten against metrics.Metrics).
type Metrics = metrics.Metrics

// ExpVarMetrics is metrics.ExpVar, under statedb's name.
type ExpVarMetrics = metrics.ExpVar

// ExpVarName is the name under which NewExpVarMetrics publishes the
// database's figures, as stratahive's Cell does with
// --strata-metrics=expvar.
const ExpVarName = "strata"

// NewExpVarMetrics is statedb's constructor of expvar metrics:
// metrics.NewExpVar(ExpVarName, publish). statedb publishes one map per
// figure, keyed by table; Strata one map, keyed by table, of each table's
// figures (metrics.ExpVar lists them).
func NewExpVarMetrics(publish bool) *metrics.ExpVar {
	return metrics.NewExpVar(ExpVarName, publish)
}
