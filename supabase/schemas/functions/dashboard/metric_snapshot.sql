-- The counters, histograms and levels of the metrics
-- (docs/design/observability.md#counters-histograms-and-levels) in one JSON
-- document, from one snapshot (a stable function's statements share its caller's), so every
-- scrape from any instance reads the same figures: { "counters": [...], "histograms": [...],
-- "gauges": [...] }, the rows of the views metrics_counters, metrics_histograms and
-- metrics_gauges (plpgsql: the views come after the functions). Its cost follows the label sets and the work in flight, never the history.
create or replace function switchyard.metric_snapshot()
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
begin
  return jsonb_build_object(
    'counters', coalesce((select jsonb_agg(to_jsonb(c) order by c.metric, c.queue_name,
                            c.function_name, c.flow, c.version, c.step, c.outcome)
                            from switchyard.metrics_counters c), '[]'::jsonb),
    'histograms', coalesce((select jsonb_agg(to_jsonb(h) order by h.metric, h.queue_name,
                              h.flow, h.version, h.step, h.outcome, h.bucket)
                              from switchyard.metrics_histograms h), '[]'::jsonb),
    'gauges', coalesce((select jsonb_agg(to_jsonb(g) order by g.gauge, g.queue_name,
                          g.function_name, g.flow, g.version)
                          from switchyard.metrics_gauges g), '[]'::jsonb));
end
$$;
