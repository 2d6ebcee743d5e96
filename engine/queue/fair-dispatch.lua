--[[
  Fair dispatch: runs wait in lanes, one per tenant and flow, and move into BullMQ's run queue only
  as fast as workers free slots, in a weighted round-robin across tenants (stride scheduling: each
  tenant has a pass that grows by 1/weight per run dispatched, and the lowest pass goes next) and a
  plain round-robin across a tenant's flows. A tenant or flow at its concurrency limit leaves the
  rotation until one of its runs ends (or its leases expire), so nothing is delayed and retried in
  a loop. Runs handed to BullMQ stay listed "in transit" until the caller confirms it added them;
  an unconfirmed hand-off is handed out again.

  Concurrency keys (flowControl.concurrency): a run with a key enters its flow's lane only while fewer than the
  key's limit hold it; the others wait in the key's line, in the order of their run ids (time-ordered: the order
  their messages arrived), and enter when a holder's run ends for good. A hold lasts from the lane to the run's end,
  its waits included: it expires (a run lost with its worker) at its lease while executing, at its wake time plus
  a lease while waiting, never while in a lane.

  Debounce keys (flowControl.debounce): a run with one waits in its key's slot, not a lane, until it is due (its
  period after it came, or its key's maxWait after the slot's first run, whichever is sooner); a later run of the key
  takes its place, and the run it replaced is returned to be ended `debounced`. A due run enters its lane (or its
  concurrency key's line).

  Priorities (flowControl.priority, a bulk replay's): a flow's runs of priority p other than 3 wait in a lane of
  their own, `<flow>#<p>`, whose place in the tenant's rotation is offset by (p - 3) * PRIORITY_STEP: a tenant's
  lanes of a higher priority (1 first) go before its others, lanes of one priority in turn. The flow's limit counts
  the runs of all its lanes.

  Invariants: a run id is in `jobs` while it is in a lane, a key's line, a debounce slot or in transit. A flow whose lane is not
  empty is in exactly one of `flows:<t>` and `blocked-flows:<t>`; a tenant with such a flow is in
  `tenants` or `blocked` (or is found again when a push or release wakes it).

  KEYS[1] BullMQ wait list     KEYS[2] paused list        KEYS[3] active list     KEYS[4] meta hash
  KEYS[5] live workers (zset: worker -> last heartbeat ms)
  KEYS[6] worker slots (hash: worker -> the runs it takes: its concurrency and a few ahead; and
          <worker>:c -> its concurrency, the runs it executes at once)
  KEYS[7] BullMQ prioritized set: runs back from a wait or a deferral (run-worker.ts), which workers take only once
          the wait list is empty. They count as queued, so that what is handed out does not starve them, but not
          against the reserved slots: a run handed out on one goes ahead of them.

  ARGV[1] key base   ARGV[2] now (ms)   ARGV[3] lease (ms)   ARGV[4] the oldest heartbeat of a live worker, in ms ago
  ARGV[5] default weight   ARGV[6] default tenant concurrency (0: no limit)
  ARGV[7] most runs to hand out   ARGV[8] transit timeout (ms)
  ARGV[9] how many run ids follow whose hand-off the caller confirms (the queue has their jobs)
  ARGV[10] reserved slots, in percent of the live workers' concurrency: the last free executing slots
  go only to tenants running fewer runs than that many, so a tenant with little to do starts at once
  while another's runs hold every other slot waiting on something slow (0: none reserved). They are
  executing slots: runs queued ahead of them for the workers count as taking one, so a run given a
  reserved slot never waits behind another tenant's.
  ARGV[11] operation: 'push' (then tenant, flow, run id, payload, concurrency key or '', its limit, debounce key or
  '', its period and maxWait in ms, its priority or 0 for its flow's ...), 'move-in' (the same, for a tenant
  being moved here), 'evict' (then tenant, 'in' or 'out', and its unfinished runs as for 'release', each with its
  debounce key in place of the time), 'settle' (then the tenant whose move in is over; then dispatches),
  'release' (then tenant, flow, run id, concurrency key or '', and 0 when the run ended for good or the time
  until which it waits ...), 'acquire', 'lease' and 'renew' (the same, the time unused), or 'dispatch'
  ARGV[12 ...] the confirmed run ids, then the operation's items

  Returns the payloads of the runs to add to the queue ('release' and 'dispatch' hand out what there is
  room for; 'lease' and 'renew' return nothing). 'push' returns them too, and the runs debounced: {payloads,
  {tenant, debounced run id, the run id that took its place, ...}}. 'acquire' leases runs that came back
  without a dispatch (from a retry's wait or a dead worker) as 'lease' does, but returns the ids of
  those it did not lease: their tenant holds every slot but the reserved ones, and they would take a
  slot kept for others (the caller defers them).

  Moving a tenant between slot groups (tenant-moves.ts): 'evict' forgets everything of the tenant's runs in this
  group (lanes, lines, holds, debounce slots, leases) and marks the tenant moving 'out' of it (where it was) or 'in'
  (where it goes). A marked tenant's runs are never dispatched here, and 'push' refuses them (a third list: their
  ids; the store has them, and the move queues them); 'move-in' queues them all the same, in the group they go to,
  until the move ends and takes that group's mark away.
]]
local rcall = redis.call
local B = ARGV[1]
local now = tonumber(ARGV[2])
local leaseMs = tonumber(ARGV[3])
local defaultWeight = tonumber(ARGV[5])
local defaultTenantLimit = tonumber(ARGV[6])
local reservedPercent = tonumber(ARGV[10])
local op = ARGV[11]
local first = 12 + tonumber(ARGV[9])
local ending = 0

local jobsKey = B .. ':jobs'
local tenantsKey = B .. ':tenants'
local blockedKey = B .. ':blocked'
local passKey = B .. ':pass'
local vclockKey = B .. ':vclock'
local backlogKey = B .. ':backlog'
local transitKey = B .. ':transit'
local weightKey = B .. ':weight'
local tenantLimitKey = B .. ':tenant-limit'
local flowLimitKey = B .. ':flow-limit'
local keyLimitKey = B .. ':key-limit'
local keyLinesKey = B .. ':key-lines'
local debounceDueKey = B .. ':debounce-due'
-- Runs waiting in key lines and debounce slots, by '<tenant>:concurrency_key' and '<tenant>:debounce'.
local keyedWaitingKey = B .. ':keyed-waiting'
local flowPriorityKey = B .. ':flow-priority'
-- Tenants moving out of or into this group: tenant -> 'out' or 'in'. Most groups have none: looked at once a call.
local movingKey = B .. ':moving'
local function isMoving(t) return rcall('HEXISTS', movingKey, t) == 1 end
local anyMoving = rcall('EXISTS', movingKey) == 1
-- Wider than the passes of a tenant's lanes ever are apart: a higher priority always goes first.
local PRIORITY_STEP = 2 ^ 40
-- A hold's expiry while its run waits in a lane: it is not executing, so nothing renews it, and it must not expire.
local HELD_IN_LANE = 1e15

local function laneKey(t, f) return B .. ':lane:' .. t .. ':' .. f end
local function flowsKey(t) return B .. ':flows:' .. t end
local function blockedFlowsKey(t) return B .. ':blocked-flows:' .. t end
local function tenantRunningKey(t) return B .. ':running:' .. t end
local function flowRunningKey(t, f) return B .. ':running:' .. t .. ':' .. f end
local function keyHoldsKey(k) return B .. ':key-holds:' .. k end
local function keyLineKey(k) return B .. ':key-line:' .. k end
local function debounceSlotKey(d) return B .. ':debounce:' .. d end
-- The lanes of flow f of a priority other than 3 that were used.
local function priorityLanesKey(t, f) return B .. ':priority-lanes:' .. t .. ':' .. f end

-- Keys begin with their tenant (tenant ids have no colon): runs waiting on them count for it.
local function countKeyed(k, kind, by)
  local field = string.match(k, '^[^:]*') .. ':' .. kind
  if rcall('HINCRBY', keyedWaitingKey, field, by) <= 0 then rcall('HDEL', keyedWaitingKey, field) end
end

-- A lane is its flow's (priority 3) or `<flow>#<p>`.
local function laneOf(f, p) if p == 3 then return f end return f .. '#' .. p end
local function flowOf(lane)
  local at = string.find(lane, '#', 1, true)
  if at then return string.sub(lane, 1, at - 1) end
  return lane
end
local function laneScore(lane, pass)
  local at = string.find(lane, '#', 1, true)
  if not at then return pass end
  return pass + (tonumber(string.sub(lane, at + 1)) - 3) * PRIORITY_STEP
end

local function tenantLimit(t) return tonumber(rcall('HGET', tenantLimitKey, t) or defaultTenantLimit) end
local function flowLimit(t, f) return tonumber(rcall('HGET', flowLimitKey, t .. ':' .. f) or '0') end
-- A run's priority: its own (a bulk replay's), else its flow's.
local function priorityOf(t, f, own)
  if own and own > 0 then return own end
  return tonumber(rcall('HGET', flowPriorityKey, t .. ':' .. f) or '3')
end

-- A tenant's place in the rotation: where it left off, but never behind the rotation's clock (so a
-- tenant returning after a pause goes next, and one that emptied and refilled at once does not jump ahead).
local function tenantPass(t)
  local last = tonumber(rcall('HGET', passKey, t) or '0')
  local clock = tonumber(rcall('GET', vclockKey) or '0')
  return math.max(last, clock)
end

-- Back into the rotation; whether it may run is checked when its turn comes.
local function wakeTenant(t)
  rcall('ZREM', blockedKey, t)
  rcall('ZADD', tenantsKey, 'NX', tenantPass(t), t)
end

local function wakeFlow(t, lane)
  rcall('ZREM', blockedFlowsKey(t), lane)
  return rcall('ZADD', flowsKey(t), 'NX', laneScore(lane, tenantPass(t)), lane)
end

-- Expired leases (a worker that died) no longer count; returns the set's size and its earliest expiry.
local function liveLeases(key)
  rcall('ZREMRANGEBYSCORE', key, '-inf', now)
  local first = rcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  return rcall('ZCARD', key), tonumber(first[2] or now)
end

-- Behind its flow's earlier runs of its priority.
local function enterLane(t, f, id, p)
  local lane = laneOf(f, p)
  if lane ~= f then rcall('SADD', priorityLanesKey(t, f), lane) end
  rcall('RPUSH', laneKey(t, lane), id)
  if not rcall('ZSCORE', blockedFlowsKey(t), lane) and wakeFlow(t, lane) == 1 then wakeTenant(t) end
end

-- The runs of key k's line there is room for enter their lanes, first come first; a key still with a line is looked
-- at again when its earliest hold would expire.
local function advanceKey(k)
  local holds, line = keyHoldsKey(k), keyLineKey(k)
  rcall('ZREMRANGEBYSCORE', holds, '-inf', now)
  local holding = rcall('ZCARD', holds)
  local limit = tonumber(rcall('HGET', keyLimitKey, k) or '1')
  while holding < limit do
    local head = rcall('ZRANGE', line, 0, 0)
    if #head == 0 then break end
    local id = head[1]
    rcall('ZREM', line, id)
    countKeyed(k, 'concurrency_key', -1)
    local payload = rcall('HGET', jobsKey, id)
    if payload then
      local run = cjson.decode(payload)
      rcall('ZADD', holds, HELD_IN_LANE, id)
      holding = holding + 1
      enterLane(run.tenantId, run.flowId, id, priorityOf(run.tenantId, run.flowId, run.priority))
    end
  end
  if rcall('ZCARD', line) > 0 then
    local earliest = rcall('ZRANGE', holds, 0, 0, 'WITHSCORES')
    rcall('ZADD', keyLinesKey, tonumber(earliest[2] or now), k)
  else
    rcall('ZREM', keyLinesKey, k)
    if holding == 0 then rcall('HDEL', keyLimitKey, k) end
  end
end

-- Run id holds key k until `expiry`: a key with a line is looked at again by then (an earlier look finds nothing to do).
local function hold(k, id, expiry, flag)
  if flag then rcall('ZADD', keyHoldsKey(k), flag, expiry, id) else rcall('ZADD', keyHoldsKey(k), expiry, id) end
  rcall('ZADD', keyLinesKey, 'XX', 'LT', expiry, k)
end

-- A run's pass ended: its slots are free; its key's hold goes when it ended for good (heldUntil 0), else lasts
-- until a lease after it wakes.
local function release(t, f, id, k, heldUntil)
  rcall('ZREM', tenantRunningKey(t), id)
  rcall('ZREM', flowRunningKey(t, f), id)
  if rcall('ZSCORE', blockedFlowsKey(t), f) then wakeFlow(t, f) end
  for _, lane in ipairs(rcall('SMEMBERS', priorityLanesKey(t, f))) do
    if rcall('ZSCORE', blockedFlowsKey(t), lane) then wakeFlow(t, lane) end
  end
  if rcall('ZSCORE', blockedKey, t) then wakeTenant(t) end
  if k == '' then return end
  if heldUntil == 0 then
    rcall('ZREM', keyHoldsKey(k), id)
    advanceKey(k)
  else
    hold(k, id, heldUntil + leaseMs)
  end
end

-- Every run counts against its tenant (its limit, and the reserved slots); against its flow only under a limit; its
-- key, if any, it holds while it executes.
local function lease(t, f, id, k)
  rcall('ZADD', tenantRunningKey(t), now + leaseMs, id)
  if flowLimit(t, f) > 0 then rcall('ZADD', flowRunningKey(t, f), now + leaseMs, id) end
  if k ~= '' then hold(k, id, now + leaseMs) end
end

-- The concurrency key of a run handed out, from its payload (most runs have none, and are not decoded).
local function keyOf(payload)
  if not string.find(payload, '"concurrency":', 1, true) then return '' end
  return cjson.decode(payload).concurrency.key
end

-- Into its lane, or its concurrency key's line.
local function admit(t, f, id, k, limit, p)
  if k == '' or rcall('ZSCORE', keyHoldsKey(k), id) then
    -- A run that holds its key already (its job was lost while it waited) takes no place in the line.
    enterLane(t, f, id, p)
  else
    rcall('HSET', keyLimitKey, k, limit)
    if rcall('ZADD', keyLineKey(k), 0, id) == 1 then countKeyed(k, 'concurrency_key', 1) end
    advanceKey(k)
  end
end

local debounced = {}

-- A run gone from a lane's count (debounced).
local function forget(t, id)
  rcall('HDEL', jobsKey, id)
  if rcall('HINCRBY', backlogKey, t, -1) <= 0 then rcall('HDEL', backlogKey, t) end
end

-- Run id of debounce key d waits in its slot: it takes the place of the slot's run (then returned, to be ended),
-- unless that run came later (ids are time-ordered: a run queued again after Redis lost it), which takes its place.
local function debounce(t, id, d, periodMs, maxWaitMs)
  local slot = debounceSlotKey(d)
  local current = rcall('HGET', slot, 'run')
  if current and current >= id then
    if current ~= id then
      forget(t, id)
      debounced[#debounced + 1] = t
      debounced[#debounced + 1] = id
      debounced[#debounced + 1] = current
    end
    return
  end
  local started = now
  if not current then countKeyed(d, 'debounce', 1) end
  if current then
    forget(t, current)
    debounced[#debounced + 1] = t
    debounced[#debounced + 1] = current
    debounced[#debounced + 1] = id
    started = tonumber(rcall('HGET', slot, 'first'))
  end
  rcall('HSET', slot, 'run', id, 'first', started)
  rcall('ZADD', debounceDueKey, math.min(now + periodMs, started + maxWaitMs), d)
end

-- Due debounced runs leave their slots for their lanes.
local function releaseDue()
  for _, d in ipairs(rcall('ZRANGEBYSCORE', debounceDueKey, '-inf', now, 'LIMIT', 0, 100)) do
    local slot = debounceSlotKey(d)
    local id = rcall('HGET', slot, 'run')
    rcall('ZREM', debounceDueKey, d)
    rcall('DEL', slot)
    countKeyed(d, 'debounce', -1)
    local payload = id and rcall('HGET', jobsKey, id)
    if payload then
      local run = cjson.decode(payload)
      local concurrency = run.concurrency or {}
      local p = priorityOf(run.tenantId, run.flowId, run.priority)
      admit(run.tenantId, run.flowId, id, concurrency.key or '', concurrency.limit or 0, p)
    end
  end
end

-- What the live workers take (their slots and a few ahead each) and execute at once (their concurrency).
local function liveWorkers()
  local workers = rcall('ZRANGEBYSCORE', KEYS[5], now - tonumber(ARGV[4]), '+inf')
  local capacity, concurrency = 0, 0
  if #workers == 0 then return 0, 0 end
  local concurrencyFields = {}
  for i, worker in ipairs(workers) do concurrencyFields[i] = worker .. ':c' end
  local taken = rcall('HMGET', KEYS[6], unpack(workers))
  local executes = rcall('HMGET', KEYS[6], unpack(concurrencyFields))
  for i = 1, #workers do
    local slots = tonumber(taken[i]) or 0
    capacity = capacity + slots
    concurrency = concurrency + (tonumber(executes[i]) or slots)
  end
  return capacity, concurrency
end

for i = 12, first - 1 do
  rcall('ZREM', transitKey, ARGV[i])
  rcall('HDEL', jobsKey, ARGV[i])
end

local refused = {}
if op == 'push' or op == 'move-in' then
  for i = first, #ARGV, 10 do
    local t, f, id, d = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 6]
    if op == 'push' and anyMoving and isMoving(t) then
      refused[#refused + 1] = id
    -- A run already waiting or in transit is not queued twice.
    elseif rcall('HSETNX', jobsKey, id, ARGV[i + 3]) == 1 then
      rcall('HINCRBY', backlogKey, t, 1)
      if d == '' then
        admit(t, f, id, ARGV[i + 4], ARGV[i + 5], priorityOf(t, f, tonumber(ARGV[i + 9])))
      else
        debounce(t, id, d, tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8]))
      end
    end
  end
elseif op == 'release' then
  -- A job still active (BullMQ's lock on it held) leaves the active list just after this call: its slot counts as
  -- free already. One that left it while this call waited its turn (moved to delayed at once) is not counted twice.
  local jobKeys = string.sub(KEYS[1], 1, -5)
  for i = first, #ARGV, 5 do
    release(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4]))
    ending = ending + rcall('EXISTS', jobKeys .. ARGV[i + 2] .. ':lock')
  end
elseif op == 'evict' then
  local t = ARGV[first]
  rcall('HSET', movingKey, t, ARGV[first + 1])
  local function forgetRuns(ids)
    for _, id in ipairs(ids) do
      rcall('HDEL', jobsKey, id)
      rcall('ZREM', transitKey, id)
    end
  end
  for _, lanes in ipairs({flowsKey(t), blockedFlowsKey(t)}) do
    for _, lane in ipairs(rcall('ZRANGE', lanes, 0, -1)) do
      forgetRuns(rcall('LRANGE', laneKey(t, lane), 0, -1))
      rcall('DEL', laneKey(t, lane), priorityLanesKey(t, flowOf(lane)))
    end
    rcall('DEL', lanes)
  end
  for i = first + 2, #ARGV, 5 do
    local f, k, d = ARGV[i + 1], ARGV[i + 3], ARGV[i + 4]
    forgetRuns({ARGV[i + 2]})
    rcall('DEL', flowRunningKey(t, f))
    if k ~= '' then
      forgetRuns(rcall('ZRANGE', keyLineKey(k), 0, -1))
      rcall('DEL', keyHoldsKey(k), keyLineKey(k))
      rcall('HDEL', keyLimitKey, k)
      rcall('ZREM', keyLinesKey, k)
    end
    if d ~= '' then
      local waiting = rcall('HGET', debounceSlotKey(d), 'run')
      if waiting then forgetRuns({waiting}) end
      rcall('DEL', debounceSlotKey(d))
      rcall('ZREM', debounceDueKey, d)
    end
  end
  rcall('DEL', tenantRunningKey(t))
  rcall('ZREM', tenantsKey, t)
  rcall('ZREM', blockedKey, t)
  rcall('HDEL', passKey, t)
  rcall('HDEL', backlogKey, t)
  rcall('HDEL', keyedWaitingKey, t .. ':concurrency_key', t .. ':debounce')
  return {}
elseif op == 'settle' then
  -- Its move in is over: back in the rotation (marked, it was taken out), and served by the dispatch below.
  local t = ARGV[first]
  rcall('HDEL', movingKey, t)
  if rcall('ZCARD', flowsKey(t)) + rcall('ZCARD', blockedFlowsKey(t)) > 0 then wakeTenant(t) end
elseif op == 'lease' then
  for i = first, #ARGV, 5 do lease(ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]) end
  return {}
elseif op == 'acquire' then
  local _, concurrency = liveWorkers()
  local kept = concurrency - math.floor(concurrency * reservedPercent / 100)
  local deferred = {}
  for i = first, #ARGV, 5 do
    local t = ARGV[i]
    if reservedPercent > 0 and liveLeases(tenantRunningKey(t)) >= kept then
      deferred[#deferred + 1] = ARGV[i + 2]
    else
      lease(t, ARGV[i + 1], ARGV[i + 2], ARGV[i + 3])
    end
  end
  return deferred
elseif op == 'renew' then
  -- Only leases still held: a run released meanwhile is not taken again.
  for i = first, #ARGV, 5 do
    rcall('ZADD', tenantRunningKey(ARGV[i]), 'XX', now + leaseMs, ARGV[i + 2])
    rcall('ZADD', flowRunningKey(ARGV[i], ARGV[i + 1]), 'XX', now + leaseMs, ARGV[i + 2])
    if ARGV[i + 3] ~= '' then hold(ARGV[i + 3], ARGV[i + 2], now + leaseMs, 'XX') end
  end
  return {}
end

local out = {}
local function finish()
  if op == 'push' or op == 'move-in' then return {out, debounced, refused} end
  return out
end

-- Hand-offs a dispatcher never confirmed (it died, or Redis failed it) are handed out again: adding
-- a job whose id exists already does nothing.
local stale = rcall('ZRANGEBYSCORE', transitKey, '-inf', now - tonumber(ARGV[8]), 'LIMIT', 0, 100)
for _, id in ipairs(stale) do
  local payload = rcall('HGET', jobsKey, id)
  if payload then
    rcall('ZADD', transitKey, now, id)
    out[#out + 1] = payload
  else
    rcall('ZREM', transitKey, id)
  end
end

releaseDue()
-- Keys whose holds expired (their runs were lost with their workers) let the next runs of their lines in.
for _, k in ipairs(rcall('ZRANGEBYSCORE', keyLinesKey, '-inf', now, 'LIMIT', 0, 20)) do advanceKey(k) end

-- Room: what live workers take (their slots and a few ahead), less what they hold or is waiting for them.
if rcall('HGET', KEYS[4], 'paused') then return finish() end
local capacity, concurrency = liveWorkers()
if capacity == 0 then return finish() end
local waiting = rcall('LLEN', KEYS[1]) + rcall('LLEN', KEYS[2])
-- Runs in transit count too: another process's call may have handed them out a moment ago, not yet queued.
local queued = waiting + rcall('ZCARD', KEYS[7]) + rcall('LLEN', KEYS[3]) + rcall('ZCARD', transitKey) - ending
local room = math.min(capacity - queued, tonumber(ARGV[7]))
-- Executing slots free, counting runs queued for the workers as taking one (it may be negative).
local free = concurrency - queued
local reserved = math.floor(concurrency * reservedPercent / 100)
-- When the queue looks full, tenants running fewer than the reserved slots may still have that many runs waiting
-- for the workers: what looks full may be the runs of a worker that died, listed active until they are taken over.
local reservedRoom = math.min(reserved - waiting, tonumber(ARGV[7]))
if room <= 0 and reservedRoom <= 0 then return finish() end
-- Each tenant's live leases and the earliest to expire, read once a call and counted up as its runs are handed out.
local leasesOf = {}
local function tenantLeases(t)
  local known = leasesOf[t]
  if not known then
    known = {liveLeases(tenantRunningKey(t))}
    leasesOf[t] = known
  end
  return known[1], known[2]
end

for _, t in ipairs(rcall('ZRANGEBYSCORE', blockedKey, '-inf', now, 'LIMIT', 0, 100)) do wakeTenant(t) end

-- The next lane of tenant t that may run (its highest priority first), or nil and when the earliest blocked one may
-- run again.
local function nextFlow(t)
  local flows, blocked = flowsKey(t), blockedFlowsKey(t)
  for _, f in ipairs(rcall('ZRANGEBYSCORE', blocked, '-inf', now, 'LIMIT', 0, 20)) do wakeFlow(t, f) end
  while true do
    local head = rcall('ZRANGE', flows, 0, 0)
    if #head == 0 then break end
    local lane = head[1]
    local limit = flowLimit(t, flowOf(lane))
    if limit == 0 then return lane end
    local running, earliest = liveLeases(flowRunningKey(t, flowOf(lane)))
    if running < limit then return lane end
    rcall('ZREM', flows, lane)
    rcall('ZADD', blocked, earliest, lane)
  end
  local first = rcall('ZRANGE', blocked, 0, 0, 'WITHSCORES')
  return nil, tonumber(first[2])
end

-- Each turn hands out a run, or takes a tenant out of the rotation (for good, or for this call when
-- only reserved slots are left), so the loop is bounded. A tenant alone keeps the reserved slots free
-- too: a tenant arriving while its runs wait on something slow would otherwise find none.
local turns = room + 1000
local sidelined = {}
while (room > 0 or reservedRoom > 0) and turns > 0 do
  turns = turns - 1
  local head = rcall('ZRANGE', tenantsKey, 0, 0, 'WITHSCORES')
  if #head == 0 then break end
  local t, pass = head[1], tonumber(head[2])
  local f, blockedUntil
  -- A tenant moving (out of this group, or into it until its runs are all here) is not served here.
  local moving = anyMoving and isMoving(t)
  local limit = tenantLimit(t)
  local onlyReserved = (reserved > 0 and free <= reserved) or room <= 0
  local counted = limit > 0 or onlyReserved
  local running, earliest = 0, now
  if counted then running, earliest = tenantLeases(t) end
  if limit > 0 and running >= limit and not moving then blockedUntil = earliest end
  local busy = not moving and not blockedUntil and onlyReserved and running >= reserved
  if not blockedUntil and not busy and not moving then f, blockedUntil = nextFlow(t) end
  if busy then
    rcall('ZREM', tenantsKey, t)
    sidelined[#sidelined + 1] = {pass, t}
  elseif not f then
    rcall('ZREM', tenantsKey, t)
    if blockedUntil then rcall('ZADD', blockedKey, blockedUntil, t) end
  else
    local lane = laneKey(t, f)
    local id = rcall('LPOP', lane)
    local payload = id and rcall('HGET', jobsKey, id)
    local nextPass = pass + 1 / tonumber(rcall('HGET', weightKey, t) or defaultWeight)
    rcall('SET', vclockKey, pass)
    rcall('HSET', passKey, t, nextPass)
    if rcall('LLEN', lane) > 0 then
      rcall('ZADD', flowsKey(t), laneScore(f, nextPass), f)
    else
      rcall('ZREM', flowsKey(t), f)
    end
    if rcall('ZCARD', flowsKey(t)) > 0 then
      rcall('ZADD', tenantsKey, nextPass, t)
    else
      rcall('ZREM', tenantsKey, t)
      local first = rcall('ZRANGE', blockedFlowsKey(t), 0, 0, 'WITHSCORES')
      if #first > 0 then rcall('ZADD', blockedKey, first[2], t) end
    end
    if payload then
      if rcall('HINCRBY', backlogKey, t, -1) <= 0 then rcall('HDEL', backlogKey, t) end
      rcall('ZADD', transitKey, now, id)
      lease(t, flowOf(f), id, keyOf(payload))
      if leasesOf[t] then leasesOf[t][1] = leasesOf[t][1] + 1 end
      out[#out + 1] = payload
      room = room - 1
      free = free - 1
      reservedRoom = reservedRoom - 1
    end
  end
end
for _, entry in ipairs(sidelined) do rcall('ZADD', tenantsKey, entry[1], entry[2]) end
return finish()
