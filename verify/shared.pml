/* SPDX-License-Identifier: BSL-1.0 */
/*
 * shared.pml: the shared (read-write) lock's exclusion rule, checked with spin.
 * verify/README.md says how to run it; docs/safety.md ("Shared locks") gives the
 * argument this model checks.
 *
 * The rule: on every node a resource's key holds either one writer's token or a record
 * of readers, each reader with its own expiry (the key's own expiry is the latest of
 * them). A writer sets the key only where it is absent or holds readers that have all
 * expired; a reader adds itself only where no writer holds the key. Each side counts a
 * grant only from a majority within its validity (start + TTL - drift), so any readers'
 * majority and any writer's majority share a node, and that node cannot have granted
 * both while both leases were live.
 *
 * What is modelled:
 *   - N nodes, each running one operation at a time (a Lua script): acquire (a writer:
 *     SET where free; a reader: add or renew its entry where no writer is), extend (the
 *     writer: compare-and-pexpire; a reader: renew its own entry if it is still there),
 *     release (the writer: compare-and-delete; a reader: remove its own entry).
 *   - C clients, the first WRITERS of them writers, the others readers. Each takes the
 *     lock once: a request may be answered in time (and counted), answered too late (it
 *     may still run at any later moment, uncounted), or lost. A won lock may be extended
 *     EXTS times, and is then released by requests that may be lost (the entries then
 *     expire on their own).
 *   - node clocks that run fast: an entry or key set at t with TTL is gone at t + TTL,
 *     and may vanish up to DRIFT ticks earlier.
 *   - RESTARTS nodes that restart empty, with the restart guard: a restarted node does
 *     not vote for G ticks (G = TTL, the longest lease anyone holds), and requests in
 *     flight to it are lost.
 *   - pauses: any client may be delayed between any two of its steps while the clock
 *     advances.
 * Left out: the writers' waiting mark (it only makes readers refuse: liveness, not
 * safety), fencing tokens (the mutex's model, redlock.pml, checks those; a writer's
 * token is the mutex's), more than one attempt per client.
 *
 * Switches (-D...):
 *   bounds     N, C, WRITERS, TTL, MAXT (the clock stops there), EXTS, RESTARTS
 *   one rule removed, each must fail:
 *              NO_DRIFT (validity ignores the drift), NO_WRITER_CHECK (a reader joins
 *              under a writer), NO_READER_CHECK (a writer takes a key that holds live
 *              readers), NO_GUARD (a restarted node votes at once)
 *
 * Property (assertion):
 *   RW  while a writer holds the lock within its validity, no other client (reader or
 *       writer) does; readers may hold it together. Checked whenever a lock is handed
 *       out or extended.
 *   no invalid end state: every client ends.
 */

#ifndef N
#define N 3
#endif
#ifndef C
#define C 3
#endif
#ifndef WRITERS
#define WRITERS 1
#endif
#define Q (N / 2 + 1)
#ifndef TTL
#define TTL 2
#endif
#define DRIFT 1
#ifdef NO_DRIFT
#define VDRIFT 0
#else
#define VDRIFT DRIFT
#endif
#ifndef MAXT
#define MAXT 4
#endif
#ifndef EXTS
#define EXTS 1
#endif
#ifndef RESTARTS
#define RESTARTS 0
#endif
#define G TTL
#define NEVER 255

#define WRITER(c) ((c) < WRITERS)
#define R(i, c) ((i) * C + (c))

byte now;
byte wown[N];      /* the writer whose token the key holds: client + 1, or 0 */
byte wexp[N];      /* when that key expires */
byte rexp[N * C];  /* when reader c's entry on node i expires (0: no entry) */
byte rstart[N];    /* when node i last restarted (NEVER: it has not) */
bool late[N * C];  /* client c's acquire to node i is still in flight, unanswered */
byte restarts;
bool held[C];      /* as the client sees it: it holds the lock ... */
byte dl[C];        /* ... until this moment (its validity) */

#define VOTES(i) (rstart[i] == NEVER || now >= rstart[i] + G)

/* whether node i holds any reader entry (expired ones are removed as time passes) */
inline readers_on(i, any, d) {
  any = 0;
  for (d : 0 .. C - 1) {
    if
    :: rexp[R(i, d)] != 0 -> any = 1
    :: else
    fi
  }
  d = 0
}

/* the acquire script of client c on node i; ok: it granted */
inline node_acquire(i, c, ok, any, d) {
  ok = 0;
  if
  :: WRITER(c) ->
     readers_on(i, any, d);
#ifdef NO_READER_CHECK
     any = 0;
#endif
     if
     :: wown[i] == 0 && !any -> wown[i] = c + 1; wexp[i] = now + TTL; ok = 1
     :: else
     fi
  :: else ->
#ifdef NO_WRITER_CHECK
     rexp[R(i, c)] = now + TTL; ok = 1
#else
     if
     :: wown[i] == 0 -> rexp[R(i, c)] = now + TTL; ok = 1
     :: else
     fi
#endif
  fi
}

/* the extend script of client c on node i */
inline node_extend(i, c, ok) {
  ok = 0;
  if
  :: WRITER(c) && wown[i] == c + 1 -> wexp[i] = now + TTL; ok = 1
  :: !WRITER(c) && rexp[R(i, c)] != 0 -> rexp[R(i, c)] = now + TTL; ok = 1
  :: else
  fi
}

/* the release script of client c on node i */
inline node_release(i, c) {
  if
  :: WRITER(c) && wown[i] == c + 1 -> wown[i] = 0; wexp[i] = 0
  :: !WRITER(c) -> rexp[R(i, c)] = 0
  :: else
  fi
}

inline check_rw(c, d) {
  for (d : 0 .. C - 1) {
    assert(d == c || !(held[d] && now < dl[d]) || (!WRITER(c) && !WRITER(d)));  /* RW */
  }
  d = 0
}

/* the clock, late requests, fast clocks and restarts */
proctype env() {
  byte i, c, d, any, ok;
end:
  do
  :: atomic {
       now < MAXT -> now++;
       printf("t=%d\n", now);
       for (i : 0 .. N - 1) {
         if
         :: wown[i] != 0 && wexp[i] <= now -> wown[i] = 0; wexp[i] = 0
         :: else
         fi;
         for (c : 0 .. C - 1) {
           if
           :: rexp[R(i, c)] != 0 && rexp[R(i, c)] <= now -> rexp[R(i, c)] = 0
           :: else
           fi
         }
       }
       i = 0; c = 0
     }
  :: atomic {  /* a request that was not answered in time runs now */
       select(i : 0 .. N - 1); select(c : 0 .. C - 1);
       if
       :: late[R(i, c)] -> late[R(i, c)] = 0;
          node_acquire(i, c, ok, any, d);
          printf("t=%d late acquire of client %d runs on node %d: %d\n", now, c, i, ok)
       :: else
       fi;
       i = 0; c = 0; ok = 0; any = 0
     }
  :: atomic {  /* node i's clock runs fast: a key or entry goes up to DRIFT early */
       select(i : 0 .. N - 1);
       if
       :: wown[i] != 0 && wexp[i] <= now + DRIFT -> wown[i] = 0; wexp[i] = 0
       :: else ->
          select(c : 0 .. C - 1);
          if
          :: rexp[R(i, c)] != 0 && rexp[R(i, c)] <= now + DRIFT -> rexp[R(i, c)] = 0
          :: else
          fi
       fi;
       i = 0; c = 0
     }
  :: atomic {  /* node i restarts empty; requests in flight to it are lost */
       restarts < RESTARTS -> restarts++;
       select(i : 0 .. N - 1);
       printf("t=%d node %d restarts empty\n", now, i);
       wown[i] = 0; wexp[i] = 0;
       for (c : 0 .. C - 1) {
         rexp[R(i, c)] = 0; late[R(i, c)] = 0
       }
#ifndef NO_GUARD
       rstart[i] = now;
#endif
       i = 0; c = 0
     }
  od
}

proctype client(byte c) {
  byte i, d, yes, start, vu, e, any, ok;
  start = now;
  for (i : 0 .. N - 1) {
    atomic {
      if
      :: VOTES(i) -> node_acquire(i, c, ok, any, d); yes = yes + ok; ok = 0; any = 0
      :: late[R(i, c)] = 1  /* no answer in time: it may run later */
      :: skip               /* lost */
      fi
    }
  }
  i = 0;
  atomic {
    vu = start + TTL - VDRIFT;
    if
    :: yes >= Q && now < vu ->
       held[c] = 1; dl[c] = vu;
       printf("t=%d client %d (writer: %d) GETS THE LOCK until %d\n", now, c,
              (WRITER(c) -> 1 : 0), vu);
       check_rw(c, d)
    :: else ->  /* undo where it may have landed; the undo itself may be lost */
       for (i : 0 .. N - 1) {
         if
         :: late[R(i, c)] == 0 -> node_release(i, c)
         :: skip
         fi
       }
       i = 0;
       goto done
    fi
  }
#if EXTS > 0
  for (e : 1 .. EXTS) {
    atomic {
      if
      :: now < dl[c] -> start = now; yes = 0
      :: else -> break  /* lost: an extension is refused, the lock released */
      fi
    };
    for (i : 0 .. N - 1) {
      atomic {
        if
        :: VOTES(i) -> node_extend(i, c, ok); yes = yes + ok; ok = 0
        :: skip  /* no answer in time (a late extension only lengthens an entry) */
        fi
      }
    }
    i = 0;
    atomic {
      vu = start + TTL - VDRIFT;
      if
      :: yes >= Q && now < dl[c] && now < vu && vu > dl[c] ->
         dl[c] = vu;
         printf("t=%d client %d extends until %d\n", now, c, vu);
         check_rw(c, d)
      :: else  /* keeps the deadline it had */
      fi
    }
  }
#endif
  atomic {
    held[c] = 0;
    for (i : 0 .. N - 1) {
      if
      :: node_release(i, c)
      :: skip  /* lost: the entry expires on its own */
      fi
    }
    i = 0
  }
done:
  skip
}

init {
  byte i;
  atomic {
    for (i : 0 .. N - 1) {
      rstart[i] = NEVER
    }
    i = 0;
    run env();
    for (i : 0 .. C - 1) {
      run client(i)
    }
  }
}
