--[[
  One outbound budget: the requests a tenant's runs may have in flight to one outside account at once, shared by
  every process. One call gives back the requests that ended and asks for those about to be sent (a process batches
  what its runs did since its last call).

  The window adapts as TCP's congestion window does. It starts small and grows while it is full: by one per success
  (doubling per round of requests, slow start) until the first overload; then by one per round (additive increase)
  back up to just below the window that was overloaded, and by one per `patience` rounds above it. An overload
  answer (429, 503, an ERP's concurrency error) cuts it to 0.8 of itself, or to half when fewer than a window of
  requests succeeded since the last cut (that cut was not enough); a Retry-After closes the budget until then. Only
  an overload of a request sent once every request in flight at the last cut had ended cuts again (TCP's recovery
  point): until then the account is still busy with what was sent before. An account with a hard limit (an ERP's
  concurrency) is overloaded at the same window again and again: each cut there doubles the patience (up to 8), so
  probing above it costs ever fewer refusals; a cut at a higher window resets it. The window never exceeds the
  configured maximum.

  A budget keeps the account's limits as configured (a destination's): the most in flight and a rate. A request that
  comes with its configuration sets them (none: no limit); one without (an http.request node naming the budget)
  obeys those kept, so every request drawing on the budget is held to them.

  Where the account prices requests (Shopify's cost points), the budget also keeps the account's bucket (points
  available, maximum, restore rate, as its answers say): a request is admitted only when its expected cost is there.
  The budget takes that cost when it admits a request and gives back what the account did not charge when it ends,
  as the account does; an answer's figure, less the cost of the requests still in flight (any may have reached the
  account after it answered), can only lower the bucket. An answer cannot raise it: a request that ended and was
  given back may have reached the account after that answer, which then counts its cost nowhere. What a kind of request costs (a query
  document) is remembered from its answers, for every process. A budget given a rate (requests a second the account
  allows, configured) keeps a bucket of that many points restored at that rate, each request costing one, until an
  answer prices requests itself.

  Runs refused wait in a line in the order they first asked. A request that ends gives its slot to the first run in
  line without one (a turn, kept for it a while; it keeps its place meanwhile), and calls the runs after it that may
  wait for their turn in place (NEAR_ROUNDS windows' worth, at most ARGV[6]), once each, so that they are back and
  waiting close by when their turn comes (a woken run takes a few rounds of requests to be back). A run that stopped
  asking (it was cancelled) is dropped from the line.

  KEYS[1] state hash   KEYS[2] in flight (zset: grant|cost|sent (ms) -> lease expiry)   KEYS[3] line (zset: run -> first ask)
  KEYS[4] turns (zset: run -> expiry)   KEYS[5] seen (zset: run -> last ask)   KEYS[6] called (zset: run -> lapse)
  KEYS[7] costs (hash: kind of request -> what it cost last time)

  ARGV[1] 'exchange' or 'status'   ARGV[2] now (ms)   ARGV[3] initial window   ARGV[4] the deployment's maximum
  ARGV[5] how long the keys outlive their last write (ms)   ARGV[6] most runs waiting in place
  ARGV[7] how long a turn is kept (ms)   ARGV[8] a run not asking this long is dropped from the line (ms)
  ARGV[9] the rate configured, requests a second   ARGV[10] the concurrency configured (each: 0 none, -1 as kept)
  exchange: ARGV[11] R, then R requests that ended: grant, cost, when it was sent (ms), 'ok' | 'overloaded' |
    'neutral', Retry-After (ms, 0 none), the account's points available, maximum and restore rate per second, and
    the request's cost as the account priced it (-1 each when it did not say), its kind ('' none), what the account
    charged for it in the end (-1 when it did not say); then A requests
    about to be sent: run, grant, lease (ms), expected cost, kind ('' none: the expected cost holds), 1 when it is
    sent again (the account refused it for its load: it goes to the head of the line) else 0
    returns {the runs to wake (those given a turn, then those called), the A answers, eight numbers each: 1 admitted
    or 0, ms until the request may go (0: when a slot frees), what it waits for (0 a slot, 1 the Retry-After, 2 its
    cost in points), runs ahead without a slot, in flight, window, 1 when it is near its turn (among the runs
    called, or the window is in its first slow start: never refused) else 0, the cost it draws}
  status: returns {window, in flight, in line}
]]
local rcall = redis.call
local stateKey, flightKey, lineKey, turnsKey, seenKey, calledKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local costsKey = KEYS[7]
local op, now = ARGV[1], tonumber(ARGV[2])
local initial, maximum, ttl, mostInPlace = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local turnMs, staleMs = tonumber(ARGV[7]), tonumber(ARGV[8])
-- A grant lost without a release (its worker died) holds the recovery point back this long at most.
local RECOVERY_MAX_MS = 30000
-- A run waiting for points the requests in flight should give back asks again after this long at least.
local MIN_POINTS_WAIT_MS = 50

rcall('ZREMRANGEBYSCORE', flightKey, '-inf', now)
rcall('ZREMRANGEBYSCORE', turnsKey, '-inf', now)
rcall('ZREMRANGEBYSCORE', calledKey, '-inf', now)

local FIELDS = {'limit', 'ssthresh', 'ceiling', 'patience', 'calm', 'cut', 'pending', 'settled', 'until', 'points',
  'pointsAt', 'rate', 'capacity', 'configured', 'most'}
local BUCKET = {'points', 'pointsAt', 'rate', 'capacity', 'configured'}
local saved = rcall('HMGET', stateKey, unpack(FIELDS))
local s = {}
for i, field in ipairs(FIELDS) do s[field] = tonumber(saved[i]) end
local changed = false
-- The concurrency configured, kept for the requests that come without it.
local configuredMost = op == 'exchange' and tonumber(ARGV[10]) or -1
if configuredMost == 0 and s.most then
  rcall('HDEL', stateKey, 'most')
  s.most = nil
elseif configuredMost > 0 and s.most ~= configuredMost then
  s.most, changed = configuredMost, true
end
if s.most then maximum = math.min(maximum, s.most) end
initial = math.min(initial, maximum)
s.limit = math.min(s.limit or initial, maximum)
s.ssthresh, s.ceiling, s.patience = s.ssthresh or maximum, s.ceiling or 0, s.patience or 1
s.calm, s.cut, s.pending, s.settled, s['until'] = s.calm or 0, s.cut or 0, s.pending or 0, s.settled or 0, s['until'] or 0
local function window() return math.max(1, math.floor(s.limit)) end
-- The runs after those with a turn that wait for theirs in place: a few rounds of requests, since a run woken from
-- waiting away takes that long to be back.
local NEAR_ROUNDS = 4
local function nearRuns() return math.min(NEAR_ROUNDS * window(), mostInPlace) end
-- The account's bucket, refilled to now (nothing known until an answer priced a request).
if s.rate then s.points, s.pointsAt = math.min(s.capacity, s.points + (now - s.pointsAt) * s.rate / 1000), now end
-- A configured rate is a bucket of a second's requests, unless the account's answers price them; a rate no longer
-- configured goes (a request without configuration leaves it).
local configuredRate = op == 'exchange' and tonumber(ARGV[9]) or -1
if configuredRate > 0 and (not s.rate or s.configured == 1) and s.rate ~= configuredRate then
  s.rate, s.capacity, s.configured, changed = configuredRate, math.max(1, configuredRate), 1, true
  s.points, s.pointsAt = math.min(s.points or s.capacity, s.capacity), now
elseif configuredRate == 0 and s.configured == 1 then
  rcall('HDEL', stateKey, unpack(BUCKET))
  for _, field in ipairs(BUCKET) do s[field] = nil end
end

-- A key written outlives its last write by `ttl`.
local function keep(key) rcall('PEXPIRE', key, ttl) end

if op == 'status' then
  return {window(), rcall('ZCARD', flightKey), rcall('ZCARD', lineKey)}
end

local function grow()
  if s.limit < s.ssthresh then
    s.limit = s.limit + 1
  elseif s.limit < s.ceiling - 1 then
    s.limit = s.limit + 1 / s.limit
  else
    s.limit = s.limit + 1 / (s.limit * s.patience)
  end
  s.limit = math.min(s.limit, maximum)
end

local function cut()
  if s.limit <= s.ceiling + 1 then s.patience = math.min(8, s.patience * 2) else s.patience = 1 end
  s.ceiling = s.limit
  if s.calm < s.limit then s.limit = s.limit / 2 else s.limit = s.limit * 0.8 end
  s.limit = math.max(1, s.limit)
  s.ssthresh, s.cut, s.calm = s.limit, now, 0
  s.pending = rcall('ZCARD', flightKey)
  if s.pending == 0 then s.settled = now end
end

-- The account's bucket as it answered, less what the requests still in flight cost: any of them may have reached
-- the account after it answered (one sent earlier too, held up on its way), and counting them never overspends.
local function inFlightCost()
  local total = 0
  for _, member in ipairs(rcall('ZRANGE', flightKey, 0, -1)) do
    local _, _, cost = string.find(member, '|(%d+)|%d+$')
    total = total + tonumber(cost)
  end
  return total
end

-- The account's bucket as an answer told it, less what is in flight; no more than the budget's own count, which took
-- each request's cost when it was admitted and gave back, as it ended, what the account did not charge (see above).
-- Below zero when more is in flight than the bucket held: that debt is kept, or as many would go beyond it.
local function priced(available, maximum, restoreRate)
  local points = available - inFlightCost()
  if s.rate and s.configured ~= 1 then points = math.min(points, s.points) end
  s.points, s.pointsAt = points, now
  s.capacity, s.rate, s.configured = maximum, restoreRate, 0
end

local function release(grant, startedAt, outcome, retryAfter)
  -- Grow only a window in use: an account that saw little traffic has not shown it can take more.
  local full = rcall('ZCARD', flightKey) >= window() or rcall('ZCARD', lineKey) > 0
  if rcall('ZREM', flightKey, grant) == 0 then return false end
  if startedAt <= s.cut and s.pending > 0 then
    s.pending = s.pending - 1
    if s.pending == 0 then s.settled = now end
  end
  if outcome == 'ok' then
    s.calm = s.calm + 1
    if full then grow() end
  elseif outcome == 'overloaded' then
    local recovered = (s.pending == 0 and startedAt >= s.settled) or now - s.cut > RECOVERY_MAX_MS
    if startedAt > s.cut and recovered then cut() end
    if retryAfter > 0 then s['until'] = math.max(s['until'], now + retryAfter) end
  end
  return true
end

local SLOT, CLOSED, POINTS = 0, 1, 2

local function acquire(run, grant, leaseMs, cost, kind, again, answers)
  if kind ~= '' then cost = tonumber(rcall('HGET', costsKey, kind) or cost) end
  -- Whole points: the caller gets the cost back as an integer and names the grant with it.
  cost = math.ceil(cost)
  -- A request that costs more than the bucket holds is the account's to refuse (Shopify: MAX_COST_EXCEEDED).
  if s.capacity then cost = math.min(cost, s.capacity) end
  local inFlight, turns = rcall('ZCARD', flightKey), rcall('ZCARD', turnsKey)
  -- Runs ahead of this one without a slot (those holding a turn are at the front).
  local place = rcall('ZRANK', lineKey, run)
  local ahead = math.max(0, (place or rcall('ZCARD', lineKey)) - turns)
  local turn = rcall('ZSCORE', turnsKey, run)
  local waitMs, reason = 0, SLOT
  if s['until'] > now then
    waitMs, reason = s['until'] - now, CLOSED
  elseif turn or ahead < window() - inFlight - turns then
    -- A slot is there; the points too, unless the account prices requests and has not restored enough yet.
    if s.rate and s.points < cost then
      -- The wait counts on the requests in flight being charged what they use, not what they asked for (the account
      -- gives the rest back as it answers): counting them as spent would wake the run seconds late. Waking early
      -- costs an ask; the answer that frees the points decides.
      local short = cost - s.points
      if s.configured ~= 1 then short = short - inFlightCost() end
      waitMs, reason = math.max(MIN_POINTS_WAIT_MS, math.ceil(short * 1000 / s.rate)), POINTS
    else
      if turn then rcall('ZREM', turnsKey, run) end
      if s.rate then s.points, changed = s.points - cost, true end
      rcall('ZADD', flightKey, now + leaseMs, grant .. '|' .. cost .. '|' .. now)
      keep(flightKey)
      if place then
        rcall('ZREM', lineKey, run)
        rcall('ZREM', seenKey, run)
        rcall('ZREM', calledKey, run)
      end
      for _, n in ipairs({1, 0, 0, 0, 0, 0, 0, cost}) do answers[#answers + 1] = n end
      return
    end
  end
  rcall('ZADD', lineKey, 'NX', again == '1' and 0 or now, run)
  rcall('ZADD', seenKey, now, run)
  keep(lineKey)
  keep(seenKey)
  local near = (s.ceiling == 0 or ahead < nearRuns()) and 1 or 0
  for _, n in ipairs({0, waitMs, reason, ahead, inFlight, window(), near, cost}) do answers[#answers + 1] = n end
end

-- Slots free go to the first runs in line as turns; the runs after them are called.
local function handOut()
  local woken, called = {}, {}
  if s['until'] > now then return woken end
  local free = window() - rcall('ZCARD', flightKey) - rcall('ZCARD', turnsKey)
  local calls = nearRuns()
  if rcall('EXISTS', lineKey) == 0 then return woken end
  local waiting = rcall('ZRANGE', lineKey, 0, rcall('ZCARD', turnsKey) + math.max(free, 0) + calls + 20)
  for _, run in ipairs(waiting) do
    if free <= 0 and calls <= 0 then break end
    if not rcall('ZSCORE', turnsKey, run) then
      if tonumber(rcall('ZSCORE', seenKey, run) or '0') < now - staleMs then
        rcall('ZREM', lineKey, run)
        rcall('ZREM', seenKey, run)
        rcall('ZREM', calledKey, run)
      elseif free > 0 then
        rcall('ZADD', turnsKey, now + turnMs, run)
        keep(turnsKey)
        rcall('ZREM', calledKey, run)
        woken[#woken + 1] = run
        free = free - 1
      else
        calls = calls - 1
        if rcall('ZADD', calledKey, 'NX', now + turnMs, run) == 1 then
          called[#called + 1] = run
          keep(calledKey)
        end
      end
    end
  end
  for _, run in ipairs(called) do woken[#woken + 1] = run end
  return woken
end

local releases = tonumber(ARGV[11])
local ENDED = 11
for i = 12, 11 + releases * ENDED, ENDED do
  local member, sentAt = ARGV[i] .. '|' .. ARGV[i + 1] .. '|' .. ARGV[i + 2], tonumber(ARGV[i + 2])
  if release(member, sentAt, ARGV[i + 3], tonumber(ARGV[i + 4])) then
    changed = true
    local charged = tonumber(ARGV[i + 10])
    if charged >= 0 and s.rate and s.configured ~= 1 then
      s.points = math.min(s.capacity, s.points + math.max(0, tonumber(ARGV[i + 1]) - charged))
    end
    local available = tonumber(ARGV[i + 5])
    if available >= 0 then priced(available, tonumber(ARGV[i + 6]), tonumber(ARGV[i + 7])) end
    local cost, kind = tonumber(ARGV[i + 8]), ARGV[i + 9]
    if cost >= 0 and kind ~= '' then
      rcall('HSET', costsKey, kind, cost)
      keep(costsKey)
    end
  end
end
local woken = releases > 0 and handOut() or {}
-- After the turns: a run given one in this call takes it, and newcomers go behind the line.
local answers = {}
for i = 12 + releases * ENDED, #ARGV, 6 do
  acquire(ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4], ARGV[i + 5], answers)
end
if changed then
  local values = {}
  for _, field in ipairs(FIELDS) do
    if s[field] then
      values[#values + 1] = field
      values[#values + 1] = tostring(s[field])
    end
  end
  rcall('HSET', stateKey, unpack(values))
  keep(stateKey)
end
return {woken, answers}
