-- The clock of supabase/schemas/tables/052_user_rerun_aliases.sql (docs/design/clock.md), once
-- switchyard.clock_now() exists: before/011_user_rerun_aliases.sql created the table with now().
alter table switchyard.user_rerun_aliases
  alter column added_at set default switchyard.clock_now();
