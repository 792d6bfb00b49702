-- Row triggers (issue 43): the declaration's time comes from the SQL core's clock, as
-- supabase/schemas/tables/130_row_triggers.sql declares it. before/046_row_triggers.sql created
-- the table before switchyard.clock_now() was defined, with now() (the same time).
alter table switchyard.row_triggers
  alter column declared_at set default switchyard.clock_now();
