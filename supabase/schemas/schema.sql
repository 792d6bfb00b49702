-- The schema and PGMQ (docs/design/supabase.md).
--
-- On Supabase the real PGMQ extension is created here. Local runs and tests
-- pre-load a PGMQ-compatible layer (pgmq_compat/pgmq.sql, never deployed), so
-- the extension is only created when the pgmq schema does not exist yet.
do $$
begin
  if not exists (select 1 from pg_namespace where nspname = 'pgmq') then
    create extension if not exists pgmq;
  end if;
end
$$;

create schema if not exists switchyard;

-- SQL errors (docs/design/errors.md). Every refusal of the SQL core carries a SQLSTATE
-- and a DETAIL that is a JSON object, so callers map errors by code and read fields from
-- the detail, never from the message (which names the value and the rule, for people):
--   22023 invalid argument, 23505 conflict, 55000 object state:
--         {"rule": <rule id>, "argument": <argument name>, "value": <the value as text,
--          at most 200 characters, or null>, ...context fields}
--   SY001 queue function paused        {"function_name", "reason"}
--   SY002 queue function disabled      {"function_name"}
--   SY003 unknown queue function(s)    {"function_names": [...]}
--   SY004 flow shape mismatch          {"flow_slug", "differences": [...]}
--   SY010 a fence is already open      {"fence_id"}
--   SY011 no fence is open             {}
--   SY020 pg_cron missing              {"database"}
