---------------------------- MODULE SparkTxnSink ----------------------------
(***************************************************************************)
(* The Spark mapping of the exactly-once sink (COMMIT-011).                *)
(*                                                                         *)
(* The driver logs batch b's input range in the offset log, runs one task  *)
(* per output partition i, and appends b to the commit log once every task *)
(* has finished.  Task i of batch b uses transactional id i: it runs       *)
(* init_transactions (fencing every earlier incarnation of i), writes the  *)
(* records of its slice of b's range, and commits them together with a    *)
(* progress marker "b" (send_offsets_to_transaction) in one transaction.   *)
(* A task whose committed marker already says b skips.  A crash restarts   *)
(* the driver: a logged but uncommitted batch is replayed; tasks of the    *)
(* crashed attempt live on as zombies with their old epoch.                *)
(*                                                                         *)
(* DeterministicReplay = TRUE: the replay reads the logged range (what     *)
(* Spark does with a source whose partitions(start, end) are a pure        *)
(* function of the offsets).  FALSE: the replay re-plans the batch and     *)
(* reads a larger range; TLC then finds a counterexample.                  *)
(* SkipCommitted = FALSE is the bug of a task that ignores its marker.     *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS NumTasks, MaxRec, MaxBatch, MaxCrashes, DeterministicReplay, SkipCommitted

Tasks == 0..(NumTasks - 1)
Recs == 1..MaxRec
NoZombie == [b |-> 0, ep |-> 0, todo |-> {}]

VARIABLES
    avail,     \* records 1..avail exist in the input
    olog,      \* offset log: batch b reads the records in (olog[b - 1], olog[b]]
    clog,      \* commit log: last committed batch
    run,       \* batch the running driver attempt executes (0: none)
    task,      \* task[i] \in {"idle", "writing", "done"} within batch run
    todo,      \* records task i has still to write
    tep,       \* epoch task i got from init_transactions
    epoch,     \* broker: current epoch of transactional id i
    txn,       \* broker: records in the open transaction of id i
    marker,    \* broker: progress marker committed by id i (last batch it committed)
    vis,       \* read_committed view: how often each record is visible
    zombie,    \* an earlier incarnation of task i still running, or NoZombie
    crashes
vars == <<avail, olog, clog, run, task, todo, tep, epoch, txn, marker, vis, zombie, crashes>>

Begin(b) == IF b = 1 THEN 0 ELSE olog[b - 1]
LastEnd == IF olog = << >> THEN 0 ELSE olog[Len(olog)]
Slice(b, i) == {r \in (Begin(b) + 1)..olog[b] : r % NumTasks = i}
Min(S) == CHOOSE x \in S : \A y \in S : x <= y

Init ==
    /\ avail = 0 /\ olog = << >> /\ clog = 0 /\ run = 0
    /\ task = [i \in Tasks |-> "idle"] /\ todo = [i \in Tasks |-> {}]
    /\ tep = [i \in Tasks |-> 0] /\ epoch = [i \in Tasks |-> 0]
    /\ txn = [i \in Tasks |-> << >>] /\ marker = [i \in Tasks |-> 0]
    /\ vis = [r \in Recs |-> 0]
    /\ zombie = [i \in Tasks |-> NoZombie] /\ crashes = 0

Arrive ==
    /\ avail < MaxRec /\ avail' = avail + 1
    /\ UNCHANGED <<olog, clog, run, task, todo, tep, epoch, txn, marker, vis, zombie, crashes>>

\* latestOffset, then the offset log entry for the next batch.
Plan ==
    /\ run = 0 /\ clog = Len(olog) /\ Len(olog) < MaxBatch /\ avail > LastEnd
    /\ olog' = Append(olog, avail) /\ run' = Len(olog) + 1
    /\ task' = [i \in Tasks |-> "idle"]
    /\ UNCHANGED <<avail, clog, todo, tep, epoch, txn, marker, vis, zombie, crashes>>

\* Skip if the committed marker says this batch is done; else fence and begin.
TaskStart(i) ==
    /\ run > 0 /\ task[i] = "idle"
    /\ IF SkipCommitted /\ marker[i] >= run
       THEN /\ task' = [task EXCEPT ![i] = "done"]
            /\ UNCHANGED <<todo, tep, epoch, txn>>
       ELSE /\ epoch' = [epoch EXCEPT ![i] = @ + 1]
            /\ txn' = [txn EXCEPT ![i] = << >>]
            /\ tep' = [tep EXCEPT ![i] = epoch[i] + 1]
            /\ todo' = [todo EXCEPT ![i] = Slice(run, i)]
            /\ task' = [task EXCEPT ![i] = "writing"]
    /\ UNCHANGED <<avail, olog, clog, run, marker, vis, zombie, crashes>>

TaskWrite(i) ==
    /\ task[i] = "writing" /\ todo[i] # {} /\ epoch[i] = tep[i]
    /\ txn' = [txn EXCEPT ![i] = Append(@, Min(todo[i]))]
    /\ todo' = [todo EXCEPT ![i] = @ \ {Min(todo[i])}]
    /\ UNCHANGED <<avail, olog, clog, run, task, tep, epoch, marker, vis, zombie, crashes>>

\* Commit of id i's transaction: its records and the marker b become visible together.
CommitTxn(i, b) ==
    /\ vis' = [r \in Recs |-> vis[r] + Cardinality({j \in 1..Len(txn[i]) : txn[i][j] = r})]
    /\ txn' = [txn EXCEPT ![i] = << >>]
    /\ marker' = [marker EXCEPT ![i] = b]

TaskCommit(i) ==
    /\ task[i] = "writing" /\ todo[i] = {} /\ epoch[i] = tep[i]
    /\ CommitTxn(i, run)
    /\ task' = [task EXCEPT ![i] = "done"]
    /\ UNCHANGED <<avail, olog, clog, run, todo, tep, epoch, zombie, crashes>>

BatchCommit ==
    /\ run > 0 /\ \A i \in Tasks : task[i] = "done"
    /\ clog' = run /\ run' = 0
    /\ UNCHANGED <<avail, olog, task, todo, tep, epoch, txn, marker, vis, zombie, crashes>>

\* Driver crash and restart: writing tasks become zombies; a logged, uncommitted batch is
\* replayed, from the logged range or (without deterministic replay) a re-planned one.
CrashRestart ==
    /\ crashes < MaxCrashes
    /\ zombie' = [i \in Tasks |->
                    IF run > 0 /\ task[i] = "writing"
                    THEN [b |-> run, ep |-> tep[i], todo |-> todo[i]] ELSE zombie[i]]
    /\ IF Len(olog) > clog
       THEN /\ run' = Len(olog)
            /\ olog' = IF DeterministicReplay THEN olog ELSE [olog EXCEPT ![Len(olog)] = avail]
       ELSE /\ run' = 0
            /\ UNCHANGED olog
    /\ task' = [i \in Tasks |-> "idle"]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<avail, clog, todo, tep, epoch, txn, marker, vis>>

\* A zombie goes on with its old epoch; the broker rejects it once a newer
\* incarnation has run init_transactions, and the zombie then stops.
ZombieStep(i) ==
    /\ zombie[i] # NoZombie
    /\ IF epoch[i] # zombie[i].ep
       THEN /\ zombie' = [zombie EXCEPT ![i] = NoZombie]
            /\ UNCHANGED <<txn, marker, vis>>
       ELSE IF zombie[i].todo # {}
       THEN /\ txn' = [txn EXCEPT ![i] = Append(@, Min(zombie[i].todo))]
            /\ zombie' = [zombie EXCEPT ![i].todo = @ \ {Min(zombie[i].todo)}]
            /\ UNCHANGED <<marker, vis>>
       ELSE /\ CommitTxn(i, zombie[i].b)
            /\ zombie' = [zombie EXCEPT ![i] = NoZombie]
    /\ UNCHANGED <<avail, olog, clog, run, task, todo, tep, epoch, crashes>>

ZombieDie(i) ==
    /\ zombie[i] # NoZombie
    /\ zombie' = [zombie EXCEPT ![i] = NoZombie]
    /\ UNCHANGED <<avail, olog, clog, run, task, todo, tep, epoch, txn, marker, vis, crashes>>

Work == Plan \/ BatchCommit \/ \E i \in Tasks : TaskStart(i) \/ TaskWrite(i) \/ TaskCommit(i)

Next ==
    \/ Work \/ Arrive \/ CrashRestart
    \/ \E i \in Tasks : ZombieStep(i) \/ ZombieDie(i)

Spec == Init /\ [][Next]_vars /\ WF_vars(Work)

-----------------------------------------------------------------------------
(* Properties; each name carries its requirement id.                       *)

COMMIT_008_COMMIT_011_NoRecordVisibleTwice == \A r \in Recs : vis[r] <= 1

\* Every record of a batch in the commit log is visible (none lost by a skipped replay).
COMMIT_011_CommittedBatchFullyVisible ==
    clog > 0 => \A r \in 1..olog[clog] : vis[r] > 0

\* Every record of a logged batch eventually becomes visible.
COMMIT_009_LoggedBatchEventuallyVisible == <>[](\A r \in 1..LastEnd : vis[r] > 0)
=============================================================================
