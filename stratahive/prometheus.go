package stratahive

import (
	strataprom "github.com/strata-db/strata/metrics/prometheus"
	reconcilerprom "github.com/strata-db/strata/reconciler/prometheus"
)

// PrometheusNamespace is the first part of the names of the Prometheus
// metrics (strata_table_objects, strata_reconciler_operations_total, ...).
const PrometheusNamespace = "strata"

// usePrometheus makes m report to Prometheus collectors, registered
// while the hive runs.
func (m *Metrics) usePrometheus() error {
	dbm, err := strataprom.New(nil, PrometheusNamespace)
	if err != nil {
		return err
	}
	rm, err := reconcilerprom.New(nil, PrometheusNamespace)
	if err != nil {
		return err
	}
	m.DB, m.Reconcilers = dbm, rm
	m.collectors = append(m.collectors, dbm, rm)
	return nil
}
