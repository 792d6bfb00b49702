-- Batching (issue 43): the batches' times come from the SQL core's clock, as
-- supabase/schemas/tables/135_batches.sql declares them. before/047_batches.sql created the
-- tables before switchyard.clock_now() was defined, with now() (the same time).
alter table switchyard.batches
  alter column opened_at set default switchyard.clock_now();
alter table switchyard.batch_events
  alter column added_at set default switchyard.clock_now();
