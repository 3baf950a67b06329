--------------------------- MODULE MCSourceRestore ---------------------------
(* Binds the tuple-valued constants a .cfg cannot hold: topic 1 may grow to *)
(* Topic1Parts partitions, topics 2..NumTopics appear later with one each.  *)
EXTENDS SourceRestore

CONSTANTS NumTopics, Topic1Parts

MCAllParts == {<<1, k>> : k \in 0..(Topic1Parts - 1)} \cup {<<t, 0>> : t \in 2..NumTopics}
MCInitParts == {<<1, 0>>}
=============================================================================
