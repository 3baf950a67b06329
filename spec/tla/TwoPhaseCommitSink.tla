------------------------- MODULE TwoPhaseCommitSink -------------------------
(***************************************************************************)
(* Flink's exactly-once Kafka sink: two-phase commit over transactions.    *)
(*                                                                         *)
(* Writer w writes its input records <<w, k>> (k = 1, 2, ...) into the     *)
(* transaction of transactional id <<w, m>>.  At barrier n it pre-commits  *)
(* (flushes) that transaction, keeps the committable <<m, epoch, n>> and   *)
(* begins transactional id <<w, n + 1>> (Flink's KafkaWriter names ids by  *)
(* checkpoint).  When checkpoint n completes globally, each committer is   *)
(* notified (the notification may be lost) and commits its committables   *)
(* up to n.  A crash restores the last completed checkpoint: recovery      *)
(* commits its committables, aborts lingering transactions (ids above the  *)
(* checkpoint that were used, as a listing would find them) and restarts   *)
(* each writer on id <<w, c + 1>>.  The crashed incarnation lives on as a  *)
(* zombie that may keep writing with its old producer epoch.               *)
(* A read_committed reader sees exactly the records of committed           *)
(* transactions: vis[r] counts how often record r is visible.              *)
(*                                                                         *)
(* Seeded bugs: CommitOnBarrier (commit before completion), AbortLingering *)
(* = FALSE (FLINK-23854), Fencing = FALSE (the broker does not reject a    *)
(* stale epoch, as the Tansu broker in SUBSTRATE.md does not).             *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS Writers, MaxCk, MaxRec, MaxCrashes, CommitOnBarrier, AbortLingering, Fencing

Tids == Writers \X (1..(MaxCk + 1))
Recs == Writers \X (1..MaxRec)
NoZombie == [tidx |-> 0, ep |-> 0, inp |-> 0]
Snap0 == [w \in Writers |-> [inp |-> 0, pend |-> {}]]

VARIABLES
    ck,        \* last checkpoint id triggered (a global counter: survives crashes)
    trig,      \* checkpoint ck was triggered by the running attempt and is not complete
    done,      \* last completed checkpoint
    dsnap,     \* its state: per writer the input position and pending committables
    notif,     \* notif[w]: completed checkpoint whose notification w has yet to get (0: none)
    inp, bar, tidx, cep, pend, wsnap,   \* the running incarnation of each writer
    epoch,     \* broker: current producer epoch of each transactional id (0: never used)
    txn,       \* broker: records in the open transaction of each id (<< >>: none open)
    vis,       \* read_committed view: how often each record is visible
    zombie,    \* the crashed incarnation of each writer, or NoZombie
    crashes
vars == <<ck, trig, done, dsnap, notif, inp, bar, tidx, cep, pend, wsnap,
          epoch, txn, vis, zombie, crashes>>

Occ(s, r) == Cardinality({j \in 1..Len(s) : s[j] = r})
RECURSIVE SumOcc(_, _)
SumOcc(T, r) == IF T = {} THEN 0
                ELSE LET t == CHOOSE x \in T : TRUE IN Occ(txn[t], r) + SumOcc(T \ {t}, r)

\* Broker effect of committing the open transactions of ids T and then running
\* init_transactions on ids A (bump the epoch, abort what is open).
CommitThenInit(T, A) ==
    /\ vis' = [r \in Recs |-> vis[r] + SumOcc(T, r)]
    /\ txn' = [t \in Tids |-> IF t \in T \cup A THEN << >> ELSE txn[t]]
    /\ epoch' = [t \in Tids |-> IF t \in A THEN epoch[t] + 1 ELSE epoch[t]]

\* The ids of committables C of writer w whose epoch is still current (a stale one is fenced).
Live(w, C) == {<<w, c.m>> : c \in {x \in C : epoch[<<w, x.m>>] = x.e}}

Init ==
    /\ ck = 0 /\ trig = FALSE /\ done = 0 /\ dsnap = Snap0
    /\ notif = [w \in Writers |-> 0]
    /\ inp = [w \in Writers |-> 0] /\ bar = [w \in Writers |-> 0]
    /\ tidx = [w \in Writers |-> 1] /\ cep = [w \in Writers |-> 1]
    /\ pend = [w \in Writers |-> {}] /\ wsnap = Snap0
    /\ epoch = [t \in Tids |-> IF t[2] = 1 THEN 1 ELSE 0]
    /\ txn = [t \in Tids |-> << >>]
    /\ vis = [r \in Recs |-> 0]
    /\ zombie = [w \in Writers |-> NoZombie]
    /\ crashes = 0

\* Input ends with the last checkpoint, so no writer is left holding data that no barrier follows.
Write(w) ==
    /\ bar[w] < MaxCk /\ inp[w] < MaxRec
    /\ epoch[<<w, tidx[w]>>] = cep[w]
    /\ txn' = [txn EXCEPT ![<<w, tidx[w]>>] = Append(@, <<w, inp[w] + 1>>)]
    /\ inp' = [inp EXCEPT ![w] = @ + 1]
    /\ UNCHANGED <<ck, trig, done, dsnap, notif, bar, tidx, cep, pend, wsnap, epoch, vis, zombie, crashes>>

Trigger ==
    /\ ~trig /\ ck < MaxCk /\ \A w \in Writers : bar[w] = ck
    /\ ck' = ck + 1 /\ trig' = TRUE
    /\ UNCHANGED <<done, dsnap, notif, inp, bar, tidx, cep, pend, wsnap, epoch, txn, vis, zombie, crashes>>

\* Barrier ck at writer w: pre-commit the current transaction, begin id <<w, ck + 1>>.
\* With the CommitOnBarrier bug the transaction is committed here, before completion.
Barrier(w) ==
    /\ trig /\ bar[w] < ck
    /\ LET cur == <<w, tidx[w]>>
           c == [m |-> tidx[w], e |-> cep[w], n |-> ck]
           kept == IF txn[cur] # << >> /\ ~CommitOnBarrier THEN {c} ELSE {}
       IN /\ CommitThenInit(IF CommitOnBarrier THEN {cur} ELSE {}, {<<w, ck + 1>>})
          /\ pend' = [pend EXCEPT ![w] = @ \cup kept]
          /\ wsnap' = [wsnap EXCEPT ![w] = [inp |-> inp[w], pend |-> pend[w] \cup kept]]
    /\ tidx' = [tidx EXCEPT ![w] = ck + 1]
    /\ cep' = [cep EXCEPT ![w] = epoch[<<w, ck + 1>>] + 1]
    /\ bar' = [bar EXCEPT ![w] = ck]
    /\ UNCHANGED <<ck, trig, done, dsnap, notif, inp, zombie, crashes>>

Complete ==
    /\ trig /\ \A w \in Writers : bar[w] = ck
    /\ done' = ck /\ dsnap' = wsnap /\ trig' = FALSE
    /\ notif' = [w \in Writers |-> ck]
    /\ UNCHANGED <<ck, inp, bar, tidx, cep, pend, wsnap, epoch, txn, vis, zombie, crashes>>

\* notifyCheckpointComplete(n) at w's committer: commit every committable up to n.
Notify(w) ==
    /\ notif[w] > 0
    /\ LET C == {c \in pend[w] : c.n <= notif[w]}
       IN /\ CommitThenInit(Live(w, C), {})
          /\ pend' = [pend EXCEPT ![w] = @ \ C]
    /\ notif' = [notif EXCEPT ![w] = 0]
    /\ UNCHANGED <<ck, trig, done, dsnap, inp, bar, tidx, cep, wsnap, zombie, crashes>>

\* A lost notification; the last checkpoint's is awaited (end of input), so never lost.
LoseNotify(w) ==
    /\ notif[w] \in 1..(MaxCk - 1)
    /\ notif' = [notif EXCEPT ![w] = 0]
    /\ UNCHANGED <<ck, trig, done, dsnap, inp, bar, tidx, cep, pend, wsnap, epoch, txn, vis, zombie, crashes>>

Lingering == IF AbortLingering THEN {t \in Tids : t[2] > done /\ epoch[t] > 0} ELSE {}

\* Crash at any point; the running writers become zombies, recovery restores checkpoint done.
CrashRecover ==
    /\ crashes < MaxCrashes
    /\ CommitThenInit(UNION {Live(w, dsnap[w].pend) : w \in Writers},
                      Lingering \cup {<<w, done + 1>> : w \in Writers})
    /\ zombie' = [w \in Writers |-> [tidx |-> tidx[w], ep |-> cep[w], inp |-> inp[w]]]
    /\ inp' = [w \in Writers |-> dsnap[w].inp]
    /\ bar' = [w \in Writers |-> ck]
    /\ tidx' = [w \in Writers |-> done + 1]
    /\ cep' = [w \in Writers |-> epoch'[<<w, done + 1>>]]
    /\ pend' = [w \in Writers |-> {}]
    /\ wsnap' = dsnap
    /\ trig' = FALSE
    /\ notif' = [w \in Writers |-> 0]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<ck, done, dsnap>>

\* The zombie writes its next record with its old epoch; a fencing broker rejects it and
\* the zombie learns it is fenced and stops.
ZombieWrite(w) ==
    /\ zombie[w] # NoZombie /\ zombie[w].inp < MaxRec
    /\ LET t == <<w, zombie[w].tidx>>
       IN IF Fencing /\ epoch[t] # zombie[w].ep
          THEN /\ zombie' = [zombie EXCEPT ![w] = NoZombie]
               /\ UNCHANGED txn
          ELSE /\ txn' = [txn EXCEPT ![t] = Append(@, <<w, zombie[w].inp + 1>>)]
               /\ zombie' = [zombie EXCEPT ![w].inp = @ + 1]
    /\ UNCHANGED <<ck, trig, done, dsnap, notif, inp, bar, tidx, cep, pend, wsnap, epoch, vis, crashes>>

ZombieDie(w) ==
    /\ zombie[w] # NoZombie
    /\ zombie' = [zombie EXCEPT ![w] = NoZombie]
    /\ UNCHANGED <<ck, trig, done, dsnap, notif, inp, bar, tidx, cep, pend, wsnap, epoch, txn, vis, crashes>>

Coordinate == Trigger \/ Complete \/ \E w \in Writers : Barrier(w) \/ Notify(w)

Next ==
    \/ Coordinate
    \/ \E w \in Writers : Write(w) \/ LoseNotify(w) \/ ZombieWrite(w) \/ ZombieDie(w)
    \/ CrashRecover

Spec == Init /\ [][Next]_vars /\ WF_vars(Coordinate)

-----------------------------------------------------------------------------
(* Properties; each name carries its requirement id.                       *)

COMMIT_008_COMMIT_010_NoRecordVisibleTwice == \A r \in Recs : vis[r] <= 1

\* A record is visible only once a completed checkpoint covers it (COMMIT-002 observed).
COMMIT_008_COMMIT_002_NoIncompleteCheckpointVisible ==
    \A r \in Recs : vis[r] > 0 => r[2] <= dsnap[r[1]].inp

\* Every record of a completed checkpoint becomes visible, lost notifications notwithstanding.
COMMIT_009_CompletedCheckpointEventuallyVisible ==
    <>[](\A r \in Recs : r[2] <= dsnap[r[1]].inp => vis[r] > 0)

\* No transaction stays open for ever (an open one pins the LSO: read_committed stalls).
COMMIT_004_NoTransactionLingers == <>[](\A t \in Tids : txn[t] = << >>)
=============================================================================
