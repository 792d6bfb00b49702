-- The fenced rollout (docs/design/versions.md): one fence around every affected queue
-- function. At most one fence is open at a time: fences do not nest, and a second fence_begin
-- is refused until fence_end. Pause flags are never touched.
create table switchyard.fences (
  fence_id bigint generated always as identity primary key,
  opened_at timestamptz not null default switchyard.clock_now(),
  closed_at timestamptz
);

-- At most one open fence.
create unique index fences_one_open on switchyard.fences ((true)) where closed_at is null;

create table switchyard.fence_members (
  fence_id bigint not null references switchyard.fences,
  function_name text not null references switchyard.worker_functions,
  was_enabled boolean not null,             -- the exact value before the fence
  deprecated_workers int not null,          -- unstopped workers asked to stop at fence_begin
  primary key (fence_id, function_name)
);
