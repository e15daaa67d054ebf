/* SPDX-License-Identifier: BSL-1.0 */
/*
 * redlock.pml: a Promela model of redlock-asio's lock protocol, checked with spin.
 * docs/safety.md ("What was model-checked") says what it covers; verify/README.md
 * says how to run it.
 *
 * What is modelled:
 *   - N Redis nodes holding one lock key (owner token + expiry on a discrete clock),
 *     the resource's fencing counter and the node's fencing marker. A node runs one
 *     operation at a time, as Redis runs a Lua script: the acquire script (SET NX PX;
 *     on a marked node also the counter increment), the write-back ("raise the
 *     counter to T where the key is still ours"), compare-and-delete,
 *     compare-and-pexpire, and the repair's read and write.
 *   - C clients, each with one connection per node. A request runs at its node while
 *     the client waits (and its reply is counted then), or the client gives up on it
 *     (timeout, lost reply) and the request may still run at any later time, after
 *     those queued before it on the same connection (FIFO). A restart breaks the
 *     node's connections: requests still in flight are lost. Requests submitted while
 *     a connection reconnects run on the new server after the handshake, which is
 *     also when the client learns the node's restart time (the restart guard's input).
 *   - acquire (fenced: the second round, the write-back, before the lock is handed
 *     out, skipped when a majority of marked nodes already reported T in round one),
 *     release after a failed attempt to every node that may have set the key,
 *     unlock, extension, the restart guard, the background repair of unmarked nodes.
 *   - incarnations: every server has one (its run id and replication id), new at every
 *     restart and every promotion. The repair's write sets the marker to the incarnation
 *     of the server it runs on, and a node counts as marked (its counter trusted for
 *     tokens, its write-back acknowledgements counted) only while its marker names the
 *     incarnation it runs now. A request carries the incarnation its connection learnt at
 *     the handshake before it was sent; connections break at every restart and promotion
 *     and requests queued meanwhile are sent after the new handshake, so that is always
 *     the incarnation of the server the request runs on. (The code's repair writes the
 *     incarnation its read came from: the same server, since under the repair's rules a
 *     write never reaches a server that restarted after the read. REPAIR_ACROSS_RESTART,
 *     the code before that rule and before incarnations, marks the server it reaches.)
 *   - nodes that restart empty (key, counter and marker lost), or with FROM_DISK from
 *     their last snapshot (key, counter and marker as they were at some earlier moment:
 *     an RDB snapshot, or an AOF that lost its last second; the marker names the old
 *     incarnation), and pauses: any process may be delayed between any two of its steps
 *     while the clock advances.
 *   - FAILOVERS: node 0 is a Redis Cluster whose replica may be promoted. The replica
 *     holds an older state of the node (replication is asynchronous); the promotion
 *     puts that state in place of the live one (its marker names the old primary),
 *     breaks the connections and holds the node back from each client's reconnect on.
 *   - MIGRATIONS: node 0 is a Redis Cluster whose slot of the resource may migrate key by
 *     key, splitting the pair (counter hash and marker) across two primaries. A fenced
 *     script declares the lock key, the hash and the marker in KEYS, so Redis answers
 *     TRYAGAIN (the script does not run) while they are split; UNDECLARED_KEYS runs it
 *     where the marker is, with no counter there.
 *
 * Switches (-D...), all described in verify/README.md:
 *   variants    UNFENCED (plain locks: no counters, no second round, no repair),
 *               EARLY_EXPIRY (a key may vanish at any moment: clock jumps, eviction;
 *               only UNIQUE is checked, and it fails), MAJORITY_LOSS
 *   start       FRESH (no node marked), PARTIAL (the last node never marked), SPREAD
 *               (counters 1 on a majority, 0 elsewhere, last token 1), UNREPAIRED
 *               (node 0 restarted earlier and is not repaired yet)
 *   one rule removed, each must fail: NO_DRIFT, NO_WRITEBACK, NO_MARKER, NO_GUARD,
 *               NO_REPAIR, NO_LOST_CHECK, LATE_ACKS, NO_FAILOVER_GUARD, NO_INCARNATION
 *               (a marker counts whichever incarnation set it), UNDECLARED_KEYS (the
 *               fence scripts' keys not declared: they run on a split pair);
 *               NO_OWNER_CHECK (holds on its own);
 *               NO_SKIP (the write-back always runs, as before the skip: holds)
 *   the repair  REPAIR_AS_IMPLEMENTED (src/drivers/fencing.cpp up to 0e85438), or its
 *               parts REPAIR_BEFORE_GUARD, REPAIR_ACROSS_RESTART, REPAIR_FRESH_MAJORITY
 *   bounds      N, C, TTL, MAXT (clock), ROUNDS (attempts per client; ROUNDS_LAST for the
 *               last one), EXTS, REPAIRS, REPAIRERS, RESTARTS (RESTART_NODE0: all hit
 *               node 0), FROM_DISK (restarts keep the last snapshot; all hit node 0),
 *               FAILOVERS (all hit node 0), MIGRATIONS (of node 0's slot), QCAP, LATE,
 *               NO_FAST_CLOCKS, REPAIR_FIRST
 *
 * Node clocks: a key set at t with TTL expires at t + TTL, or up to DRIFT ticks earlier
 * (a node clock running fast); the client's validity is start + TTL - DRIFT.
 *
 * Properties (assertions):
 *   ME     no two clients hold the lock within their validity at the same time
 *          (checked when a lock is handed out or extended; timed runs only)
 *   FENCE  timed runs: each fencing token handed out is greater than every token
 *          handed out before it (so a paused holder cannot obtain a token after
 *          another client held the lock)
 *   UNIQUE no fencing token is handed out twice (implied by FENCE; checked on its own
 *          only under EARLY_EXPIRY)
 *   LSL    lost stays lost: an extension never succeeds after the lock's deadline has
 *          passed or after a majority was found not to hold it
 *   PROGRESS a repair that heard from every node leaves out no unmarked node that was
 *          connected and past its restart guard since before the repair began (so once
 *          faults stop, the next repair restores every node's marker)
 *   no invalid end state: every client ends its rounds (no deadlock)
 */

#ifndef N
#define N 3
#endif
#ifndef C
#define C 2
#endif
#define Q (N / 2 + 1)
#define CN (C * N)
#ifndef TTL
#define TTL 2           /* lock TTL, in ticks */
#endif
#define DRIFT 1         /* a node's clock may run this many ticks fast over a TTL */
#ifdef NO_DRIFT
#define VDRIFT 0        /* negative variant: validity ignores the drift */
#else
#define VDRIFT DRIFT    /* validity = start + TTL - DRIFT */
#endif
#define G TTL           /* restart guard = max_ttl = the TTL all clients use */
#ifndef MAXT
#define MAXT 5          /* the clock stops here */
#endif
#ifndef ROUNDS
#define ROUNDS 2        /* acquisition attempts per client */
#endif
#ifndef ROUNDS_LAST
#define ROUNDS_LAST ROUNDS  /* ... for the last client */
#endif
#define ROUNDS_OF(c) ((c) == C - 1 -> ROUNDS_LAST : ROUNDS)
#ifndef EXTS
#define EXTS 1          /* extensions per client */
#endif
#ifndef REPAIRS
#define REPAIRS 1       /* repairs started per client */
#endif
#ifndef REPAIRERS
#define REPAIRERS 1     /* clients that run repairs (the first ones) */
#endif
#ifndef RESTARTS
#define RESTARTS 1      /* node restarts */
#endif
#ifndef FAILOVERS
#define FAILOVERS 0     /* promotions of node 0's replica */
#endif
#ifndef MIGRATIONS
#define MIGRATIONS 0    /* migrations of node 0's slot that split the pair */
#endif
#ifdef FROM_DISK
#define RESTART_NODE0   /* the snapshot is node 0's */
#if FAILOVERS > 0
#error "FROM_DISK and FAILOVERS share node 0's copy: use one of them"
#endif
#endif
#if FAILOVERS > 0 || defined(FROM_DISK)
#define COPY 1          /* node 0's older copy is tracked: its replica, or its snapshot */
#else
#define COPY 0
#endif
#if MIGRATIONS > 0 && (RESTARTS > 0 || FAILOVERS > 0 || defined(UNFENCED))
#error "MIGRATIONS: fenced, with RESTARTS=0 and no failover (not modelled together)"
#endif
#ifndef QCAP
#define QCAP 2          /* requests still in flight per connection */
#endif
#ifndef LATE
#define LATE 2          /* requests still in flight, over all connections */
#endif

#ifdef UNFENCED
#define FENCED 0
#else
#define FENCED 1
#endif

/* operations a node runs */
mtype = { SET, RAISE, DEL, PEXPIRE, READ, WRITE, no_reply, HELD, OK, SET_UNMARKED, REFUSED, MARKED, UNMARKED };
#define OP_SET   1      /* acquire script */
#define OP_RAISE 2      /* fencing write-back */
#define OP_DEL   3      /* compare-and-delete */
#define OP_PEXP  4      /* compare-and-pexpire */
#define OP_READ  5      /* repair: marker and counter */
#define OP_WRITE 6      /* repair: raise the counter, set the marker */

/* replies */
#define R_NONE 0        /* none in time */
#define R_HELD 1        /* SET: another key is there */
#define R_YES  2        /* SET on a marked node (value: counter), raise ack, pexpire ok */
#define R_UNM  3        /* SET on an unmarked node: set, no counter value */
#define R_NO   4        /* raise / pexpire refused */
#define R_RM   5        /* read: marked (value: counter) */
#define R_RU   6        /* read: unmarked */

#define UP   0
#define DOWN 1

#define BIT(i) (1 << (i))

/* a readable trail: spin -t prints these (verification ignores them) */
#define LOG_FAIL() printf("t=%d client %d: attempt failed\n", now, c)
#define LOG_EXEC(i, c, op, tok, arg) \
  printf("t=%d node %d runs %e(token %d, arg %d) for client %d\n", now, i, \
         (op == OP_SET -> SET : (op == OP_RAISE -> RAISE : (op == OP_DEL -> DEL : \
         (op == OP_PEXP -> PEXPIRE : (op == OP_READ -> READ : WRITE))))), tok, arg, c)
#define LOG_REPLY(i, rk, rv) \
  printf("      -> %e %d; node %d now: key %d, counter %d, marker %d, incarnation %d\n", \
         (rk == R_NONE -> no_reply : (rk == R_HELD -> HELD : (rk == R_YES -> OK : \
         (rk == R_UNM -> SET_UNMARKED : (rk == R_NO -> REFUSED : (rk == R_RM -> MARKED : UNMARKED)))))), \
         rv, i, owner[i], ctr[i], mark[i], inc[i])
#define CAN_DEFER(k) (len(rq[k]) < QCAP && nlate < LATE)

/* outcome of a client's round */
#define UNDECIDED 0
#define GRANTED   1
#define FAILED    2
#define KEPT      3     /* extension done; the lock is still held */
#define LOST      4     /* the lock is lost */

/* ---- nodes --------------------------------------------------------------------- */
byte now;
byte owner[N];          /* token in the lock key; 0: no key (expired keys are removed) */
byte kexp[N];           /* the key's expiry */
byte ctr[N];            /* fencing counter */
byte inc[N] = 1;        /* the server's incarnation (run id and replication id): 1 at the
                           start, a new one at every restart and every promotion */
#ifdef FRESH
byte mark[N];           /* fencing marker: the incarnation that set it; 0: no marker */
#else
byte mark[N] = 1;       /* (marked by the servers that run at the start) */
#endif
bit  dirty[N];          /* restarted and not repaired yet (bounds the restarts) */
byte heldu[N];          /* restart time + G: the guard holds the node back until then */
byte nrestart;
#if COPY
/* node 0's older copy: its replica (FAILOVERS) or its last snapshot on disk (FROM_DISK),
   a state the node had at some earlier moment (ENV_SYNC copies the node's state whole,
   at any moment, so any prefix of its write history is possible). The marker is copied
   as it is: it names the incarnation that set it */
byte rowner;
byte rkexp;
byte rctr;
byte rmark;
#endif
#if FAILOVERS > 0
byte nfailover;
#endif
#if MIGRATIONS > 0
/* node 0's slot migrates key by key: while split is set, its marker is on one primary
   and its counter hash on another (either may have moved first; the lock key, moved with
   its TTL, is wherever a request finds it, as MIGRATE and ASK make it) */
bit  split;
byte nmig;
#ifdef UNDECLARED_KEYS
byte sctr;              /* the counter a script created where the marker is, from 0 */
#endif
#endif

/* ---- connections, index c * N + i --------------------------------------------------- */
chan rq[CN] = [QCAP] of { byte, byte, byte };   /* in flight: op, token, argument */
bit  conn[CN];          /* UP, or DOWN: broken by a restart, reconnecting */
byte vheld[CN];         /* the client's view of heldu, learnt at the handshake */
bit  cvalid[CN];        /* the client's waited-for request is on a live connection */
bit  rvalid[CN];        /* the repair's read went over the connection still up */
#if FAILOVERS > 0
bit  promoted[CN];      /* broken by a failover: the reconnect sees the promotion */
#endif
byte cpend[C];          /* nodes the client's round waits for */
byte nlate;             /* requests in flight that nobody waits for */
byte rpend[C];          /* nodes the repair waits for */
#ifdef REPAIR_FIRST
bit  repaired[C];       /* the client's repairs are over */
#endif

/* ---- ghosts for the properties ------------------------------------------------------- */
bit  held[C];           /* the client holds a lock it believes valid ... */
byte dl[C];             /* ... until this deadline */
bit  lost[C];           /* the lock was declared lost */
byte lastT;             /* the last fencing token handed out */
#ifdef EARLY_EXPIRY
int  given;             /* the fencing tokens handed out, as a bit set (in timed runs
                           FENCE implies UNIQUE, and the set would only split states) */
#endif

#ifdef NO_GUARD
#define VOTES(c, i) (1)
#else
#define VOTES(c, i) (now >= vheld[(c) * N + (i)])
#endif

#ifdef LATE_ACKS
#define LATE_ACKS_COUNT 1   /* write-back acknowledgements count after the validity */
#else
#define LATE_ACKS_COUNT 0
#endif

#ifdef NO_SKIP
#define MAY_SKIP 0          /* the write-back runs even when a majority reported T */
#else
#define MAY_SKIP 1
#endif

#ifdef NO_OWNER_CHECK
#define OWNER_OK(i, tok) (1)
#else
#define OWNER_OK(i, tok) (owner[i] == (tok))
#endif

/* whether node i counts as marked: its marker names the incarnation it runs now */
#ifdef NO_INCARNATION
#define MARKED(i) (mark[i] != 0)    /* any marker counts, whichever server set it */
#else
#define MARKED(i) (mark[i] == inc[i])
#endif

#ifdef NO_MARKER
#define TRUSTED(i) (1)
#else
#define TRUSTED(i) MARKED(i)
#endif

#ifdef MAJORITY_LOSS
#define MAX_DIRTY (N - 1)
#else
#define MAX_DIRTY (N - Q)
#endif

/* repeat a macro for every node / connection index */
#if N == 3
#define FOR_N(M) M(0) M(1) M(2)
#define ALL_MARKED_MORE
#elif N == 5
#define FOR_N(M) M(0) M(1) M(2) M(3) M(4)
#define ALL_MARKED_MORE && MARKED(3) && MARKED(4)
#else
#error "N must be 3 or 5"
#endif
#if CN == 3
#define FOR_CN(M) M(0) M(1) M(2)
#elif CN == 6
#define FOR_CN(M) M(0) M(1) M(2) M(3) M(4) M(5)
#elif CN == 9
#define FOR_CN(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8)
#elif CN == 10
#define FOR_CN(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9)
#elif CN == 15
#define FOR_CN(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14)
#else
#error "C * N must be 6, 9, 10 or 15"
#endif

/* node i runs op (the script as it runs on one server); the reply goes to rk, rv */
inline node_run(i, op, tok, arg, rk, rv) {
  if
  :: op == OP_SET ->
     if
     :: owner[i] != 0 -> rk = R_HELD
     :: else ->
        owner[i] = tok; kexp[i] = now + TTL;
        if
        :: !FENCED -> rk = R_YES
        :: FENCED && TRUSTED(i) -> ctr[i]++; rk = R_YES; rv = ctr[i]
        :: FENCED && !TRUSTED(i) -> rk = R_UNM
        fi
     fi
  :: op == OP_RAISE ->
     if
     :: OWNER_OK(i, tok) && TRUSTED(i) ->
        if
        :: ctr[i] < arg -> ctr[i] = arg
        :: else
        fi;
        rk = R_YES
     :: else -> rk = R_NO
     fi
  :: op == OP_DEL ->
     if
     :: owner[i] == tok -> owner[i] = 0; kexp[i] = 0
     :: else
     fi
  :: op == OP_PEXP ->
     if
     :: owner[i] == tok -> kexp[i] = now + TTL; rk = R_YES
     :: else -> rk = R_NO
     fi
  :: op == OP_READ ->
     rv = ctr[i];
     if
     :: MARKED(i) -> rk = R_RM
     :: else -> rk = R_RU
     fi
  :: op == OP_WRITE ->
#ifndef NO_REPAIR
     if
     :: ctr[i] < arg -> ctr[i] = arg
     :: else
     fi;
#endif
     mark[i] = inc[i]; dirty[i] = 0         /* the marker names this server */
  fi
}

/* node i runs op for client c; the reply goes to rk, rv.
   MIGRATIONS: while node 0's pair is split, the scripts that touch it (all but
   compare-and-delete and compare-and-pexpire, which touch the lock key alone) declare
   keys that are not all on one primary: Redis answers TRYAGAIN and nothing runs, which
   the client counts as a failed request (rk stays R_NONE; a repair's read counts as no
   answer). UNDECLARED_KEYS: the code that passed the hash and the marker in ARGV, so
   Redis could not see that they were apart: the script ran where the request was sent
   (sent with ASKING to the importing primary, for one), and where that was the marker's
   primary without the counter hash (the importing primary when the marker moved first,
   the source when the counter did), HINCRBY counted from an empty hash. The marker counts
   there, as any marker did before incarnations (and as the source's own marker still
   does when the counter moved first) */
inline node_exec(i, c, op, tok, arg, rk, rv, n, j, d) {
  rk = R_NONE; rv = 0;
  LOG_EXEC(i, c, op, tok, arg);
#if MIGRATIONS > 0
  if
  :: i == 0 && split && op != OP_DEL && op != OP_PEXP ->
#ifdef UNDECLARED_KEYS
     printf("t=%d   node 0's pair is split: it runs where the marker is, with no counter\n", now);
     d = ctr[0]; ctr[0] = sctr;
     node_run(i, op, tok, arg, rk, rv);
     LOG_REPLY(i, rk, rv);                  /* the counter there */
     sctr = ctr[0]; ctr[0] = d; d = 0
#else
     printf("      -> TRYAGAIN: node 0's pair is split by a migration; not run\n")
#endif
  :: else -> node_run(i, op, tok, arg, rk, rv); LOG_REPLY(i, rk, rv)
  fi
#else
  node_run(i, op, tok, arg, rk, rv);
  LOG_REPLY(i, rk, rv)
#endif
}

/* ---- the environment: clock, requests in flight, reconnects, restarts ------------- */

/* a node runs a request that its client no longer waits for */
#define ENV_DELIVER(k) \
  :: atomic { len(rq[k]) > 0 && conn[k] == UP -> \
       rq[k]?op, tok, arg; nlate--; \
       node_exec(k % N, k / N, op, tok, arg, rk, rv, n, j, d); \
       op = 0; tok = 0; arg = 0; rk = 0; rv = 0 }

/* The client's reaction to a promotion it sees at a handshake (src/connection/cluster.cpp,
   on_shard_event): the node counts as started now, so it is held back for G from this
   client's reconnect on (the server's uptime is older, and now + G is the later of the
   two). Its marker needs no deletion: the promoted server has a new incarnation, so the
   marker it copied from the old primary no longer counts (MARKED). */
#ifdef NO_FAILOVER_GUARD
#define PROMOTION_HELD(k) heldu[(k) % N]        /* only the server's uptime counts */
#else
#define PROMOTION_HELD(k) (now + G)
#endif
#if FAILOVERS > 0
#define LEARN_HELD(k) \
  if \
  :: promoted[k] -> promoted[k] = 0; vheld[k] = PROMOTION_HELD(k) \
  :: else -> vheld[k] = heldu[k % N] \
  fi
#else
#define LEARN_HELD(k) vheld[k] = heldu[k % N]
#endif

/* a broken connection reconnects; the handshake reads the node's uptime and incarnation
   (and, on a cluster, whether its primary was promoted) */
#define ENV_RECONNECT(k) \
  :: atomic { conn[k] == DOWN -> conn[k] = UP; LEARN_HELD(k); \
       printf("t=%d client %d reconnects to node %d: held back until %d\n", \
              now, k / N, k % N, vheld[k]) }

/* n = how many nodes other than i lost state and are not repaired yet */
#define COUNT_DIRTY_OTHERS(i) \
  n = 0; \
  for (j : 0 .. N - 1) { \
    if \
    :: j != i && dirty[j] -> n++ \
    :: else \
    fi \
  }

/* node i's connections break: what was in flight on them is lost */
#define BREAK_CONNECTIONS(i) \
  for (c : 0 .. C - 1) { \
    k = c * N + i; \
    do \
    :: len(rq[k]) > 0 -> rq[k]?op, tok, arg; nlate-- \
    :: else -> break \
    od; \
    conn[k] = DOWN; cvalid[k] = 0; rvalid[k] = 0 \
  }

/* node 0's copy is tracked while a restart (FROM_DISK) or failover may still use it */
#if FAILOVERS > 0
#define COPY_LIVE (nfailover < FAILOVERS)
#elif defined(FROM_DISK)
#define COPY_LIVE (nrestart < RESTARTS)
#endif
#if COPY
/* after the last restart or failover that may use it, the copy is no longer tracked */
#define COPY_AGAIN \
  if \
  :: COPY_LIVE -> rowner = owner[0]; rkexp = kexp[0]; rctr = ctr[0]; rmark = mark[0] \
  :: else -> rowner = 0; rkexp = 0; rctr = 0; rmark = 0 \
  fi
#endif

/* What a restart leaves: nothing, or with FROM_DISK node 0's last snapshot (the key
   with its expiry, or none; an older counter; the marker as it was, naming an earlier
   incarnation). A key that expired since the snapshot was dropped from the copy at the
   tick, as Redis drops expired keys when it loads. */
#ifdef FROM_DISK
#define RESTART_STATE(i) \
  owner[i] = rowner; kexp[i] = rkexp; ctr[i] = rctr; mark[i] = rmark; COPY_AGAIN
#define RESTART_LOG(i) \
  printf("t=%d node %d RESTARTS FROM DISK: key %d, counter %d, marker %d, incarnation %d\n", \
         now, i, owner[i], ctr[i], mark[i], inc[i])
#else
#define RESTART_STATE(i) owner[i] = 0; kexp[i] = 0; ctr[i] = 0; mark[i] = 0
#define RESTART_LOG(i) \
  printf("t=%d node %d RESTARTS EMPTY: key %d, counter %d, marker %d, incarnation %d\n", \
         now, i, owner[i], ctr[i], mark[i], inc[i])
#endif

/* node i restarts, as a new incarnation: everything in flight to it is lost */
#define ENV_RESTART(i) \
  :: atomic { nrestart < RESTARTS -> \
       COUNT_DIRTY_OTHERS(i); \
       if \
       :: !FENCED || n < MAX_DIRTY -> \
          nrestart++; \
          RESTART_STATE(i); inc[i]++; dirty[i] = 1; \
          heldu[i] = now + G; \
          RESTART_LOG(i); \
          BREAK_CONNECTIONS(i) \
       :: else \
       fi; \
       n = 0; j = 0; c = 0; k = 0; op = 0; tok = 0; arg = 0 }

#if COPY
/* node 0's replica catches up, or node 0 writes a snapshot: the copy is the node's state
   as it is now */
#define ENV_SYNC \
  :: atomic { COPY_LIVE && \
       (rmark != mark[0] || rowner != owner[0] || rkexp != kexp[0] || rctr != ctr[0]) -> \
       rowner = owner[0]; rkexp = kexp[0]; rctr = ctr[0]; rmark = mark[0]; \
       printf("t=%d node 0's copy catches up: key %d, counter %d, marker %d\n", \
              now, rowner, rctr, rmark) }
#endif

#if FAILOVERS > 0
/* Node 0's replica is promoted: its older state replaces the live one (a key that
   expired meanwhile was dropped from the copy at the tick: a replica hides expired keys
   and the new primary deletes them), with the replica's marker, which names the old
   primary's incarnation; the new primary is a new incarnation. The old primary's
   connections break and what was in flight on them is lost, as at a restart. A failover
   counts against MAX_DIRTY like a restart, since it may have lost counter raises. The
   next replica is a full copy of the new primary. */
#define ENV_FAILOVER \
  :: atomic { nfailover < FAILOVERS -> \
       COUNT_DIRTY_OTHERS(0); \
       if \
       :: !FENCED || n < MAX_DIRTY -> \
          nfailover++; \
          owner[0] = rowner; kexp[0] = rkexp; ctr[0] = rctr; mark[0] = rmark; inc[0]++; \
          dirty[0] = 1; \
          printf("t=%d node 0 FAILS OVER: key %d until %d, counter %d, marker %d, incarnation %d\n", \
                 now, owner[0], kexp[0], ctr[0], mark[0], inc[0]); \
          BREAK_CONNECTIONS(0); \
          for (c : 0 .. C - 1) { \
            promoted[c * N] = 1 \
          }; \
          COPY_AGAIN \
       :: else \
       fi; \
       n = 0; j = 0; c = 0; k = 0; op = 0; tok = 0; arg = 0 }
#endif

#if MIGRATIONS > 0
/* node 0's slot starts migrating and one key of the pair moves before the other */
#define ENV_SPLIT \
  :: atomic { nmig < MIGRATIONS && !split -> nmig++; split = 1; \
       printf("t=%d node 0's slot migrates: its marker and counter are on two primaries\n", \
              now) }
/* the other key follows: the pair is whole again, on the importing primary. A counter a
   script created on the marker's side is overwritten by the one that moves (MIGRATE
   REPLACE) */
#ifdef UNDECLARED_KEYS
#define JOIN_COUNTER sctr = 0;
#else
#define JOIN_COUNTER
#endif
#define ENV_JOIN \
  :: atomic { split -> split = 0; JOIN_COUNTER \
       printf("t=%d node 0's migration ends: the pair is whole again\n", now) }
#endif

/* node i's clock runs fast: the key expires up to DRIFT ticks early */
#define ENV_FAST(i) \
  :: atomic { owner[i] != 0 && kexp[i] <= now + DRIFT -> owner[i] = 0; kexp[i] = 0; \
       printf("t=%d node %d's clock runs fast: the key expires now\n", now, i) }

/* the key on node i vanishes before its time */
#define ENV_EARLY(i) \
  :: atomic { owner[i] != 0 -> owner[i] = 0; kexp[i] = 0; \
       printf("t=%d the key on node %d vanishes early\n", now, i) }

/* started by init once the start state is set (a restart or a failover before it would
   only be overwritten by it, and split the states in two) */
proctype env() {
  byte c, k, op, tok, arg, rk, rv, n, j, d, i;
end:
  do
  :: atomic {
       now < MAXT -> now++;
       printf("t=%d\n", now);
       for (i : 0 .. N - 1) {
         if
         :: owner[i] != 0 && kexp[i] <= now -> owner[i] = 0; kexp[i] = 0
         :: else
         fi
       }
#if COPY
       if
       :: rowner != 0 && rkexp <= now -> rowner = 0; rkexp = 0
       :: else
       fi;
#endif
       i = 0
     }
  FOR_CN(ENV_DELIVER)
  FOR_CN(ENV_RECONNECT)
#if RESTARTS == 1 || defined(RESTART_NODE0)
  ENV_RESTART(0)        /* nodes are interchangeable: one restart may as well hit node 0 */
#else
  FOR_N(ENV_RESTART)
#endif
#if COPY
  ENV_SYNC
#endif
#if FAILOVERS > 0
  ENV_FAILOVER
#endif
#if MIGRATIONS > 0
  ENV_SPLIT
  ENV_JOIN
#endif
#ifdef EARLY_EXPIRY
  FOR_N(ENV_EARLY)
#else
#ifndef NO_FAST_CLOCKS
  FOR_N(ENV_FAST)
#endif
#endif
  od
}

/* ---- clients ------------------------------------------------------------------------ */

/* the operation of the current round */
#define ROUND_OP (phase == 1 -> OP_SET : (phase == 2 -> OP_RAISE : OP_PEXP))

/* send the round's request to node i (voting says whether the guard is consulted) */
inline send_one(i, voting) {
  k = c * N + i;
  if
  :: voting && !VOTES(c, i) -> fl++                /* held back: not sent */
  :: else ->
     if
     :: conn[k] == UP -> cpend[c] = cpend[c] | BIT(i); cvalid[k] = 1;
        if
        :: phase == 1 -> mask = mask | BIT(i)
        :: else
        fi
     :: conn[k] == DOWN -> fl++                      /* backoff: fails at once */
     :: conn[k] == DOWN && CAN_DEFER(k) ->          /* reconnecting: runs after the */
        rq[k]!ROUND_OP, tok, T; nlate++; fl++;       /* handshake, answer not in time */
        if
        :: phase == 1 -> mask = mask | BIT(i)
        :: else
        fi
     fi
  fi;
  k = 0
}

/* stop waiting: requests still in flight may run later, or never */
inline abandon() {
  for (i : 0 .. N - 1) {
    k = c * N + i;
    if
    :: (cpend[c] & BIT(i)) && cvalid[k] && CAN_DEFER(k) -> rq[k]!ROUND_OP, tok, T; nlate++
    :: else
    fi;
    cvalid[k] = 0
  }
  cpend[c] = 0; i = 0; k = 0
}

/* compare-and-delete on the nodes in m, fire and forget. Modelled as running at once
   (when nothing is queued before it) or never, in which case the key expires: a release
   that runs late only removes the key at a moment between these two */
inline release(m) {
  for (i : 0 .. N - 1) {
    k = c * N + i;
    if
    :: (m & BIT(i)) && len(rq[k]) == 0 && conn[k] == UP && owner[i] == tok ->
       owner[i] = 0; kexp[i] = 0
    :: else
    fi
  }
  i = 0; k = 0
}

inline check_me() {
#ifndef EARLY_EXPIRY
  for (d : 0 .. C - 1) {
    assert(d == c || !(held[d] && now < dl[d]))                          /* ME */
  }
  d = 0
#else
  skip
#endif
}

inline hand_out() {
  held[c] = 1; dl[c] = vu; lost[c] = 0;
  printf("t=%d client %d GETS THE LOCK (token %d), fencing token %d, valid until %d\n",
         now, c, tok, T, vu);
  check_me();
  if
  :: FENCED ->
#ifndef EARLY_EXPIRY
     assert(T > lastT);                                  /* FENCE, and so UNIQUE */
#else
     assert((given & (1 << T)) == 0);                                    /* UNIQUE */
     given = given | (1 << T);
#endif
     lastT = T
  :: else
  fi;
  res = GRANTED
}

/* decide, as on_tally / on_write_back_tally / extend_op::on_tally */
inline tally() {
  if
  :: res != UNDECIDED
  :: else ->
  if
  :: phase == 1 && yes >= Q ->
     abandon();
     if
     :: now >= vu -> release(mask); res = FAILED; LOG_FAIL()
     :: else ->
#if FENCED && !defined(NO_WRITEBACK)
        if
        :: MAY_SKIP && atT >= Q ->
           /* a majority's counters are T already (fence_decision in quorum/rules.hpp) */
           printf("t=%d client %d won round one: T = %d on a majority; no write-back\n",
                  now, c, T);
           hand_out()
        :: else ->
           /* round two: raise the counters to T where the key is still ours */
           phase = 2; yes = 0; no = 0; fl = 0;
           printf("t=%d client %d won round one: T = %d; write-back\n", now, c, T);
           for (i : 0 .. N - 1) {
             send_one(i, 0)
           }
           i = 0;
           if
           :: no + fl > N - Q -> abandon(); release(mask); res = FAILED; LOG_FAIL()
           :: else
           fi
        fi
#else
        hand_out()
#endif
     fi
  :: phase == 1 && no + fl > N - Q -> abandon(); release(mask); res = FAILED; LOG_FAIL()
  :: phase == 2 && yes >= Q ->
     abandon();
     if
     :: now >= vu && !LATE_ACKS_COUNT -> release(mask); res = FAILED; LOG_FAIL()
     :: else -> hand_out()
     fi
  :: phase == 2 && no + fl > N - Q -> abandon(); release(mask); res = FAILED; LOG_FAIL()
  :: phase == 3 && yes >= Q ->
     abandon();
#ifndef NO_LOST_CHECK
     if
     :: now >= odl -> lost[c] = 1; held[c] = 0; dl[c] = 0; res = LOST; printf("t=%d client %d: lock lost\n", now, c)
     :: else
     fi;
#endif
     if
     :: res != UNDECIDED
     :: else ->
        if
        :: now >= nvu -> lost[c] = 1; held[c] = 0; dl[c] = 0; res = LOST   /* confirmed too late */
        :: else ->
           assert(!lost[c] && now < odl);                                /* LSL */
           held[c] = 1; dl[c] = nvu;
           printf("t=%d client %d extended, valid until %d\n", now, c, nvu);
           check_me();
           res = KEPT
        fi
     fi
  :: phase == 3 && no + fl > N - Q ->
     abandon();
     if
     :: no > N - Q -> lost[c] = 1; held[c] = 0; dl[c] = 0; res = LOST; printf("t=%d client %d: lock lost\n", now, c)   /* a majority said not ours */
     :: else -> res = KEPT
     fi
  :: else
  fi
  fi;
  /* a decided round leaves nothing behind that differs by the order of its replies */
  if
  :: res != UNDECIDED -> yes = 0; no = 0; fl = 0; mask = 0; T = 0; atT = 0; vu = 0; odl = 0; nvu = 0
  :: else
  fi
}

/* count node i's answer (rk: R_NONE when none came in time) */
inline take(i, rk, rv) {
  cpend[c] = cpend[c] & ~BIT(i); cvalid[c * N + i] = 0;
  if
  :: phase == 1 ->
     if
     :: rk == R_NONE || now >= vu || !VOTES(c, i) -> fl++
     :: else ->
        if
        :: rk == R_HELD -> no++; mask = mask & ~BIT(i)
        :: rk == R_UNM -> no++
        :: rk == R_YES -> yes++;
           if                                    /* T, and how many reported it */
           :: rv > T -> T = rv; atT = 1
           :: rv == T -> atT++
           :: else
           fi
        fi
     fi
  :: phase == 2 ->
     if
     :: rk == R_YES && VOTES(c, i) && (now < vu || LATE_ACKS_COUNT) -> yes++
     :: else -> no++
     fi
  :: phase == 3 ->
     if
#ifdef NO_LOST_CHECK
     :: rk == R_NONE || !VOTES(c, i) -> fl++
#else
     :: rk == R_NONE || now >= odl || !VOTES(c, i) -> fl++
#endif
     :: else ->
        if
        :: rk == R_YES -> yes++
        :: else -> no++
        fi
     fi
  fi;
  tally()
}

/* node i runs the request now and the client counts its reply */
#define CLIENT_NODE(i) \
  :: atomic { (cpend[c] & BIT(i)) && cvalid[c * N + i] && len(rq[c * N + i]) == 0 -> \
       node_exec(i, c, ROUND_OP, tok, T, rk, rv, n, j, d); \
       take(i, rk, rv); rk = 0; rv = 0 }

/* the round's deadline passes for node i: every request of a round shares one deadline
   (min(start + node_timeout, validity)), so all still pending time out together. The
   request may still run later, after those queued before it on its connection */
#define TIMEOUT_NODE(i) \
  if \
  :: cpend[c] & BIT(i) -> \
     k = c * N + i; \
     if \
     :: cvalid[k] && CAN_DEFER(k) -> rq[k]!ROUND_OP, tok, T; nlate++ \
     :: else \
     fi; \
     k = 0; \
     printf("t=%d client %d: no reply in time from node %d\n", now, c, i); \
     take(i, R_NONE, 0) \
  :: else \
  fi;

proctype client(byte c) {
  byte att, tok, vu, T, atT, yes, no, fl, mask, res, phase, nexts, odl, nvu;
  byte i, k, rk, rv, d, n, j, e;                 /* scratch, reset after use */
#ifdef REPAIR_FIRST
  /* a repairing client runs its repairs before its own attempts (the other clients'
     attempts still interleave with them): fewer states */
  (c >= REPAIRERS || repaired[c]);
#endif

again:
  if
  :: att >= ROUNDS_OF(c) -> goto finish
  :: else
  fi;
  atomic {                                       /* acquire: SET on every voting node */
    att++; tok = c * ROUNDS + att; vu = now + TTL - VDRIFT;
    printf("t=%d client %d tries to lock (token %d, valid until %d if won)\n", now, c, tok, vu);
    held[c] = 0; dl[c] = 0; lost[c] = 0;
    phase = 1; res = UNDECIDED; yes = 0; no = 0; fl = 0; T = 0; atT = 0; mask = 0; cpend[c] = 0;
    for (i : 0 .. N - 1) {
      send_one(i, 1)
    }
    i = 0;
    tally()
  }
collect:
  do
  :: res != UNDECIDED -> break
  FOR_N(CLIENT_NODE)
  :: atomic { cpend[c] != 0 -> FOR_N(TIMEOUT_NODE) skip }
  od;
  if
  :: res == FAILED -> goto again
  :: else
  fi;
holding:
  atomic { phase = 0; res = UNDECIDED; yes = 0; no = 0; fl = 0; nvu = 0; odl = 0 }
  do
  :: atomic {                                    /* unlock, or drop a lost lock */
       held[c] = 0; dl[c] = 0;
       printf("t=%d client %d unlocks\n", now, c);
       release(BIT(N) - 1)
     }
     goto again
  :: nexts < EXTS ->                             /* extend */
     atomic {
       nexts++;
       if
#ifndef NO_LOST_CHECK
       :: lost[c] || now >= dl[c] -> lost[c] = 1; held[c] = 0; dl[c] = 0   /* lock_lost at once */
#endif
       :: else ->
          odl = dl[c]; nvu = now + TTL - VDRIFT;
          printf("t=%d client %d extends (deadline %d, new %d)\n", now, c, odl, nvu);
          phase = 3; res = UNDECIDED; yes = 0; no = 0; fl = 0; cpend[c] = 0;
          for (i : 0 .. N - 1) {
            send_one(i, 1)
          }
          i = 0;
          tally()
       fi
     }
     if
     :: phase == 3 -> goto collect
     :: else
     fi
  od;
finish:
  skip
}

#if FENCED
/* ---- the background repair of unmarked nodes (fence_repair_op) -------------------- */

/* Whether a read is lost is chosen when it is sent (a lost read changes nothing, and
   the repair may pause before it finishes as long as it likes); a restart loses it too,
   and a read that did not run (TRYAGAIN, MIGRATIONS) is no answer */
#define REPAIR_NODE(i) \
  :: atomic { (rpend[c] & BIT(i)) && rvalid[c * N + i] && len(rq[c * N + i]) == 0 -> \
       node_exec(i, c, OP_READ, 0, 0, rk, rv, n, j, d); \
       if \
       :: rk == R_NONE \
       :: else -> \
          ans = ans | BIT(i); KEEP_VALUE(i, rv); \
          if \
          :: rk == R_RM -> mk = mk | BIT(i) \
          :: else \
          fi \
       fi; \
       rpend[c] = rpend[c] & ~BIT(i); rk = 0; rv = 0 } \
  :: atomic { (rpend[c] & BIT(i)) && !rvalid[c * N + i] -> rpend[c] = rpend[c] & ~BIT(i) }

/* Which nodes count, which maximum is written, and where, when a repair finishes.

   The rule (the default):
   - every node that answered counts (the maximum may include unmarked ones: raising a
     counter is always safe);
   - it goes ahead when a majority of the nodes that answered are marked, or when every
     node answered (a fresh or partly initialised fleet: the maximum over all nodes is
     at least every counter that still exists anywhere);
   - it writes to an unmarked node only over a connection that is up now and whose server
     was already past its restart guard when the repair started (GUARD_AT_START): every
     write-back the node acknowledged before it restarted was then complete on the
     others before any of our reads, and a server that restarted after our reads began
     (which a write across a reconnect would reach) fails the test.

   REPAIR_AS_IMPLEMENTED: src/drivers/fencing.cpp before this rule (up to 0e85438): the
   nodes counted are those that answered and vote when the repair finishes; it goes ahead
   on a marked majority or when none is marked and a majority is unmarked; the maximum is
   over the marked ones; it writes to every unmarked node that votes at the finish, over
   whatever connection it has then (a request submitted while reconnecting runs on the new
   server). The parts, separately: REPAIR_BEFORE_GUARD, REPAIR_ACROSS_RESTART,
   REPAIR_FRESH_MAJORITY. */
#ifdef REPAIR_AS_IMPLEMENTED
#define REPAIR_BEFORE_GUARD
#define REPAIR_ACROSS_RESTART
#define REPAIR_FRESH_MAJORITY
#endif
#ifdef REPAIR_FRESH_MAJORITY
#define COUNTED(i) ((ans & BIT(i)) && VOTES(c, i))
#define GOES_AHEAD (nm >= Q || (nm == 0 && nu >= Q))
#define IN_MAX(i) (COUNTED(i) && (nm == 0 || (mk & BIT(i))))
#define KEEP_VALUE(i, v) val[i] = v        /* which ones count is known at the finish */
#else
#define COUNTED(i) (ans & BIT(i))
#define GOES_AHEAD (nm >= Q || nm + nu == N)
#define KEEP_VALUE(i, v) if :: v > mx -> mx = v :: else fi   /* the maximum over all */
#endif
#ifdef REPAIR_BEFORE_GUARD
#define PAST_GUARD(i, k) VOTES(c, i)
#else
#define PAST_GUARD(i, k) (vheld[k] <= t0)
#endif
#ifdef REPAIR_ACROSS_RESTART
#define WRITE_OK(i, k) PAST_GUARD(i, k)
#else
#define WRITE_OK(i, k) (conn[k] == UP && PAST_GUARD(i, k))
#endif

proctype repairer(byte c) {
  byte nrep, i, k, rk, rv, n, j, d, ans, mk, mx, nm, nu, t0;
#ifdef REPAIR_FRESH_MAJORITY
  byte val[N];
#endif
  do
  :: nrep < REPAIRS && !(MARKED(0) && MARKED(1) && MARKED(2) ALL_MARKED_MORE) ->
     atomic {                                    /* read every node */
       nrep++; ans = 0; mk = 0; rpend[c] = 0; t0 = now;
       printf("t=%d client %d starts a repair\n", now, c);
       for (i : 0 .. N - 1) {
         k = c * N + i;
         if
         :: conn[k] == UP -> rpend[c] = rpend[c] | BIT(i); rvalid[k] = 1
         :: conn[k] == UP                          /* lost */
         :: conn[k] == DOWN
         fi
       }
       i = 0; k = 0
     }
     do
     :: rpend[c] == 0 -> break
     FOR_N(REPAIR_NODE)
     od;
     atomic {                                    /* finish */
       printf("t=%d client %d finishes its repair\n", now, c);
       nm = 0; nu = 0;
       for (i : 0 .. N - 1) {
         if
         :: COUNTED(i) ->
            if
            :: mk & BIT(i) -> nm++
            :: else -> nu++
            fi
         :: else
         fi
       }
       if
       :: GOES_AHEAD ->
#ifdef REPAIR_FRESH_MAJORITY
          for (i : 0 .. N - 1) {
            if
            :: IN_MAX(i) && val[i] > mx -> mx = val[i]
            :: else
            fi
          }
#endif
          for (i : 0 .. N - 1) {
            k = c * N + i;
            if
            :: COUNTED(i) && !(mk & BIT(i)) && WRITE_OK(i, k) ->
               if
               :: len(rq[k]) == 0 && conn[k] == UP ->  /* runs at once */
                  node_exec(i, c, OP_WRITE, 0, mx, rk, rv, n, j, d)
               :: CAN_DEFER(k) -> rq[k]!OP_WRITE, 0, mx; nlate++  /* later */
               :: skip                                 /* never (lost, backoff) */
               fi
            :: else
            fi
          }
       :: else
       fi;
#ifndef NO_PROGRESS_CHECK
       /* PROGRESS: a repair that heard from every node, each unmarked one connected and
          past its guard since before the repair began, leaves none of them out */
       if
       :: ans == BIT(N) - 1 ->
          for (i : 0 .. N - 1) {
            k = c * N + i;
            assert((mk & BIT(i)) || conn[k] != UP || vheld[k] > t0 ||
                   (GOES_AHEAD && COUNTED(i) && WRITE_OK(i, k)))         /* PROGRESS */
          }
       :: else
       fi;
#endif
       for (i : 0 .. N - 1) {
#ifdef REPAIR_FRESH_MAJORITY
         val[i] = 0;
#endif
         rvalid[c * N + i] = 0
       }
       i = 0; k = 0; rk = 0; rv = 0; ans = 0; mk = 0; mx = 0; nm = 0; nu = 0; t0 = 0
     }
  :: else -> break
  od;
#ifdef REPAIR_FIRST
  repaired[c] = 1;
#endif
  nrep = 0
}
#endif

init {
  byte i;
  atomic {
#ifdef PARTIAL
    mark[N - 1] = 0;     /* the fleet's initialisation never reached the last node */
#endif
#ifdef SPREAD
    /* a history the counters may have had: token 1 was written back to nodes 0 .. Q - 1,
       the others lag behind. Tokens that would repeat are then reachable with one
       acquisition per client instead of three */
    for (i : 0 .. N - 1) {
      if
      :: i < Q -> ctr[i] = 1
      :: else
      fi
    }
    lastT = 1;
#endif
#ifdef UNREPAIRED
    /* node 0 restarted empty earlier, is past its guard, and was not repaired yet */
    ctr[0] = 0; mark[0] = 0; inc[0] = 2; dirty[0] = 1;
#endif
#if COPY
    rctr = ctr[0];       /* node 0's copy starts in step with it */
    rmark = mark[0];
#endif
    run env();           /* first, so that pan tries its moves after the others' */
    for (i : 0 .. C - 1) {
      run client(i)
    }
#if FENCED
    for (i : 0 .. REPAIRERS - 1) {
      run repairer(i)
    }
#endif
    i = 0
  }
}
