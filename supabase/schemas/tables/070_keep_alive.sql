-- Keep-alive (docs/design/versions.md, last bullet): the operator settings it reads and the
-- wakes it asked for.

-- Operator settings (the keep-alive's, and the limits of docs/design/limits.md). Secrets belong in
-- Supabase Vault when
-- it is present (a secret named 'switchyard_functions_bearer' wins over the row
-- here); the table is the fallback for servers without Vault.
create table switchyard.settings (
  name text primary key
    check (name in ('functions_base_url', 'functions_bearer', 'functions_hosts', 'max_input_bytes',
                    'max_output_bytes', 'max_map_output_bytes', 'user_runs_per_minute',
                    'priority_ageing_seconds')),
  value text not null,
  updated_at timestamptz not null default switchyard.clock_now()
);

-- Every wake the keep-alive asked for: the audit trail, and the only effect when
-- pg_net is absent.
create table switchyard.wake_requests (
  wake_id bigint generated always as identity primary key,
  function_name text not null references switchyard.worker_functions,
  queue_name text not null,
  url text not null,                        -- absolute with a base URL, else the gateway path
  via text not null check (via in ('pg_net', 'recorded')),
  request_id bigint,                        -- pg_net's request id (net._http_response)
  requested_at timestamptz not null default switchyard.clock_now()
);

create index wake_requests_by_function on switchyard.wake_requests (function_name, requested_at);

-- Wake records by age, for prune's cutoff.
create index wake_requests_requested on switchyard.wake_requests (requested_at);
