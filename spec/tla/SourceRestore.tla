---------------------------- MODULE SourceRestore ----------------------------
(***************************************************************************)
(* Discovery, assignment and restore of a Flink-style Kafka source.        *)
(*                                                                         *)
(* Partitions <<topic, index>> appear over time (partition growth, topics  *)
(* appearing); records are appended to them.  Subtasks 0..par-1 discover   *)
(* the partitions the assigner gives them, read them, and checkpoint their *)
(* next offsets.  A crash restores the last completed checkpoint at any    *)
(* parallelism in Pars.  The downstream output `out` is rolled back with   *)
(* the checkpoint, so exactly-once means: out[p] is 0, 1, 2, ... in order. *)
(*                                                                         *)
(* RestoreMode: "union-filter" (legacy consumer, union list state, each    *)
(* subtask keeps what the assigner gives it), "split-redistribution"       *)
(* (FLIP-27: splits redistributed in chunks, the enumerator hands out new  *)
(* partitions), or the bug "even-split" (legacy per-subtask discovery with *)
(* even-split list state).  StartNew = "LATEST" and FilterOnMetadata =     *)
(* TRUE are the other seeded bugs.                                         *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    AllParts,          \* every partition that may ever exist: <<topic, index>>
    InitParts,         \* partitions existing at start
    MaxRec,            \* records appended per partition at most
    Pars,              \* parallelisms the job may (re)start with
    InitPar,
    MaxCrashes,
    RestoreMode,       \* "union-filter" | "split-redistribution" | "even-split" (bug)
    StartNew,          \* start of partitions appearing after start: "EARLIEST" | "LATEST" (bug)
    FilterOnMetadata   \* TRUE: bug FLINK-6006, restore filters against a partial metadata view

Max(S) == CHOOSE m \in S : \A x \in S : x <= m
Subtasks == 0..(Max(Pars) - 1)

VARIABLES parts, written, par, pos, out, ckpt, crashes
vars == <<parts, written, par, pos, out, ckpt, crashes>>

(* Flink's assigner: clockwise round-robin from a per-topic start index.   *)
(* The topic number stands in for the masked hash (ASSIGN-004 is tested    *)
(* against the JVM elsewhere; here only its shape matters).                *)
Owner(p, n) == (((p[1] * 31) % n) + p[2]) % n

Holders(p) == {i \in Subtasks : p \in DOMAIN pos[i]}
Held == UNION {DOMAIN pos[i] : i \in Subtasks}
NoPos == [p \in {} |-> 0]

\* The union list state of a checkpoint is the set of its <<partition, offset>> entries.
CkptParts == {e[1] : e \in ckpt.entries}
OffsetIn(E, p) == CHOOSE o \in {e[2] : e \in {x \in E : x[1] = p}} : TRUE
AsPos(E) == [p \in {e[1] : e \in E} |-> OffsetIn(E, p)]

RECURSIVE SortSeq(_)
Key(e) == e[1][1] * 100 + e[1][2]
SortSeq(S) == IF S = {} THEN << >>
              ELSE LET m == CHOOSE x \in S : \A y \in S : Key(x) <= Key(y)
                   IN <<m>> \o SortSeq(S \ {m})
\* Chunk i of n of a list, as Flink's round-robin list-state repartitioner cuts it.
Chunk(L, i, n) == {L[j] : j \in ((i * Len(L)) \div n + 1)..(((i + 1) * Len(L)) \div n)}

\* The job starts from EARLIEST; StartNew is the offset of partitions that appear later.
Start(p) == IF StartNew = "LATEST" /\ p \notin InitParts THEN written[p] ELSE 0

Init ==
    /\ parts = InitParts
    /\ written = [p \in AllParts |-> 0]
    /\ par = InitPar
    /\ pos = [i \in Subtasks |-> NoPos]
    /\ out = [p \in AllParts |-> << >>]
    /\ ckpt = [entries |-> {}, out |-> [p \in AllParts |-> << >>]]
    /\ crashes = 0

\* A partition appears: the next index of a topic (ids ascend from 0), or a new topic.
Create(p) ==
    /\ p \in AllParts \ parts
    /\ p[2] = 0 \/ <<p[1], p[2] - 1>> \in parts
    /\ parts' = parts \cup {p}
    /\ UNCHANGED <<written, par, pos, out, ckpt, crashes>>

Write(p) ==
    /\ p \in parts /\ written[p] < MaxRec
    /\ written' = [written EXCEPT ![p] = @ + 1]
    /\ UNCHANGED <<parts, par, pos, out, ckpt, crashes>>

AddPos(i, p, o) == [q \in DOMAIN pos[i] \cup {p} |-> IF q = p THEN o ELSE pos[i][q]]

\* Legacy consumer: each subtask's discoverer reports new partitions the assigner gives it.
SubtaskDiscover(i, p) ==
    /\ RestoreMode \in {"union-filter", "even-split"}
    /\ i < par /\ p \in parts /\ Owner(p, par) = i /\ p \notin DOMAIN pos[i]
    /\ pos' = [pos EXCEPT ![i] = AddPos(i, p, Start(p))]
    /\ UNCHANGED <<parts, written, par, out, ckpt, crashes>>

\* FLIP-27: the enumerator hands a partition it never assigned to the assigner's reader.
EnumeratorDiscover(p) ==
    /\ RestoreMode = "split-redistribution"
    /\ p \in parts \ Held
    /\ pos' = [pos EXCEPT ![Owner(p, par)] = AddPos(Owner(p, par), p, Start(p))]
    /\ UNCHANGED <<parts, written, par, out, ckpt, crashes>>

Read(i, p) ==
    /\ p \in DOMAIN pos[i] /\ pos[i][p] < written[p]
    /\ out' = [out EXCEPT ![p] = Append(@, pos[i][p])]
    /\ pos' = [pos EXCEPT ![i][p] = @ + 1]
    /\ UNCHANGED <<parts, written, par, ckpt, crashes>>

\* A completed checkpoint: a consistent cut of source offsets and downstream output.
Checkpoint ==
    /\ ckpt' = [entries |-> UNION {{<<p, pos[i][p]>> : p \in DOMAIN pos[i]} : i \in Subtasks},
              out |-> out]
    /\ ckpt' # ckpt
    /\ UNCHANGED <<parts, written, par, pos, out, crashes>>

RestoredPos(n, view) ==
    IF RestoreMode = "union-filter"
    THEN [i \in Subtasks |->
            AsPos({e \in ckpt.entries : i < n /\ Owner(e[1], n) = i /\ e[1] \in view})]
    ELSE [i \in Subtasks |->
            IF i < n THEN AsPos(Chunk(SortSeq(ckpt.entries), i, n)) ELSE NoPos]

\* Crash, then restore the last completed checkpoint at parallelism n.  With the bug,
\* the metadata fetched at restore may miss partitions and restore filters against it.
CrashRestore(n) ==
    /\ crashes < MaxCrashes
    /\ \E view \in (IF FilterOnMetadata THEN SUBSET parts ELSE {parts}) :
           pos' = RestoredPos(n, view)
    /\ par' = n
    /\ out' = ckpt.out
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<parts, written, ckpt>>

Progress ==
    \/ \E i \in Subtasks, p \in AllParts : SubtaskDiscover(i, p) \/ Read(i, p)
    \/ \E p \in AllParts : EnumeratorDiscover(p)

Next ==
    \/ Progress
    \/ \E p \in AllParts : Create(p) \/ Write(p)
    \/ Checkpoint
    \/ \E n \in Pars : CrashRestore(n)

Spec == Init /\ [][Next]_vars /\ WF_vars(Progress)

-----------------------------------------------------------------------------
(* Properties; each name carries its requirement id.                       *)

\* No partition is held by two subtasks at once, whatever the assigner (the safety part of RESTORE_002).
ASSIGN_007_NoDoubleAssignment ==
    \A p \in AllParts : Cardinality(Holders(p)) <= 1

\* Every partition is held by at most one subtask, only subtasks in range(par) hold any,
\* and every partition of the last completed checkpoint is held by someone.
RESTORE_002_ExactlyOneOwner ==
    /\ \A p \in AllParts : Cardinality(Holders(p)) <= 1
    /\ \A i \in Subtasks : i >= par => pos[i] = NoPos
    /\ CkptParts \subseteq Held

\* Output of each partition never repeats or skips an offset, nor goes backwards.
RESTORE_003_NoOffsetDuplicatedOrSkipped ==
    \A p \in AllParts : \A j \in 2..Len(out[p]) : out[p][j] = out[p][j - 1] + 1

\* The first record read from any partition is offset 0: from the job's start (EARLIEST)
\* for the partitions existing then, and from EARLIEST for any that appear later.
DISC_005_NewPartitionsStartAtEarliest ==
    \A p \in AllParts : out[p] # << >> => out[p][1] = 0

\* Under fairness every record written is eventually read (and kept across restores).
RESTORE_003_EveryRecordEventuallyRead ==
    <>[](\A p \in parts : Len(out[p]) = written[p])
=============================================================================
