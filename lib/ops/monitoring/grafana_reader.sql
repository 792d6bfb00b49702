-- What Grafana's PostgreSQL data source needs to read Switchyard's metrics
-- (docs/design/observability.md#counters-histograms-and-levels), and nothing more: the schema, the
-- four metrics views, and the functions those views
-- call. Create the role first with a password of your own, e.g.
--   create role switchyard_grafana login password '...';
-- then run this file. tests/ops/grafana_dashboard_test.ts runs every query of
-- grafana_dashboard.json as this role.
grant usage on schema switchyard to switchyard_grafana;
grant select on switchyard.metrics_counters, switchyard.metrics_histograms,
  switchyard.metrics_gauges, switchyard.metrics_minutes to switchyard_grafana;
grant execute on function switchyard.metric_levels(), switchyard.metric_bucket_bounds(),
  switchyard.dashboard_metrics_history(int) to switchyard_grafana;
