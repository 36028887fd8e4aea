package sparkagg.exec

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, ExprId, Expression}
import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.catalyst.plans.physical.{CoalescedHashPartitioning, HashPartitioning, Partitioning, UnknownPartitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, ShuffleExchangeExec}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.hash.Murmur3_x86_32

/**
 * The states a Partial (or PartialMerge) node hands a merging node across the shuffle by the keys, in packets:
 * instead of one shuffled row per group, the producer appends each group's row (keys and states, an UnsafeRow)
 * to a packet for the shuffle partition Spark would send the row to, and the shuffle moves packets, a row of
 * `(route, packed_states)` each, where `route` is an integer that Spark's hash partitioning of `route` sends to
 * that same partition. The merging node reads each packet's rows in place. (Not to be confused with
 * [[sparkagg.api.StatePacking]], one function's state fields packed into one value.)
 *
 * Why: Spark's shuffle costs per row (serialization, a checksum, a length read through a locked stream), and
 * at a million groups it was half the time of an aggregation (docs/grouped-operator.md), none of it
 * DataFusion's. A packet row costs that once per up to a megabyte of states.
 *
 * The merging node's rows are partitioned as the plain exchange's would be, by the same keys into the same
 * partitions (the producer computes the partition with Spark's own partition expression): the node claims
 * that hash partitioning, so an operator above it that needs its keys clustered gets no second shuffle.
 *
 * Under adaptive execution the packets' exchange asks for partitions of `spark.sparkagg.groups.packetPartitionBytes`
 * (4 MB) where Spark's rows get `spark.sql.adaptive.advisoryPartitionSizeInBytes` (64 MB): a merging task turns its
 * packets into a key table and accumulators several times their bytes (a t-digest of a few values about three
 * times, and the operator reserves twice what it holds), so partitions coalesced by the rows' measure, or to as
 * few as there are cores, left the merging tasks of a 1 GB driver spilling at a million groups.
 *
 * `keys` are the exchange's hash expressions over `unpacked`, the producer's rows before packing. Setting
 * `spark.sparkagg.groups.packets=false` keeps a row per group.
 */
final case class StatePackets(keys: Seq[Expression], numPartitions: Int, unpacked: Seq[Attribute], route: Attribute,
    states: Attribute) {
  def output: Seq[Attribute] = Seq(route, states)

  /** The merging node's partitioning from its child's (the packets' hash partitioning by `route`, maybe
   *  coalesced by adaptive execution): the same partitions, by the keys. */
  def byKeys(packets: Partitioning): Partitioning = packets match {
    case h: HashPartitioning if byRoute(h) => HashPartitioning(keys, h.numPartitions)
    case c: CoalescedHashPartitioning if byRoute(c.from) =>
      c.copy(from = HashPartitioning(keys, c.from.numPartitions))
    case other => UnknownPartitioning(other.numPartitions)
  }

  /** The packing with its attributes numbered by position, as Spark canonicalizes a plan's own: two plans
   *  that pack alike then compare alike, and an exchange of one is reused by the other. */
  def canonical: StatePackets = {
    def numbered(a: Attribute, i: Int): Attribute = AttributeReference("none", a.dataType, a.nullable)(ExprId(i))
    StatePackets(
      keys.map(QueryPlan.normalizeExpressions(_, unpacked)),
      numPartitions,
      unpacked.zipWithIndex.map { case (a, i) => numbered(a, i) },
      numbered(route, 0),
      numbered(states, 1)
    )
  }

  private def byRoute(h: HashPartitioning): Boolean = h.expressions match {
    case Seq(a: Attribute) => a.exprId == route.exprId
    case _ => false
  }
}

object StatePackets {
  val EnabledConf = "spark.sparkagg.groups.packets"
  val PartitionBytesConf = "spark.sparkagg.groups.packetPartitionBytes"

  /** The advisory size of a packets' shuffle partition: the least of the setting, Spark's for rows and the one
   *  the exchange already asked for. */
  private def advisoryBytes(conf: SQLConf, asked: Option[Long]): Long =
    (Seq(JavaUtils.byteStringAsBytes(conf.getConfString(PartitionBytesConf, "4m")),
      conf.getConf(SQLConf.ADVISORY_PARTITION_SIZE_IN_BYTES)) ++ asked).min

  /** Header of a packet row: its null bits, `route`, and the offset and size of `states`. */
  private[exec] val Header = 24
  /** A packet leaves when it holds this much, or less with many partitions: a producer holds at most one
   *  packet per partition, about 16 MiB in all. At most 1 MiB less 1 KiB: under half a G1 region of 2 MiB
   *  (the region of heaps from 4 GB), so that a packet is not a humongous object, which takes a region of
   *  its own and is allocated outside the young generation. */
  private[exec] def packetBytes(numPartitions: Int): Int =
    math.max(8 << 10, math.min((1 << 20) - (1 << 10), (16 << 20) / numPartitions))

  /** The seed of Spark's Murmur3Hash, which its hash partitioning uses. */
  private[exec] val HashSeed = 42

  /** For each partition p of n, an integer that Spark's hash partitioning into n partitions sends to p:
   *  pmod(murmur3(v, seed 42), n) == p, as `HashPartitioning.partitionIdExpression` computes it. */
  def routes(n: Int): Array[Int] = {
    val routes = Array.fill(n)(-1)
    var found = 0
    var v = 0
    while (found < n) {
      val p = Math.floorMod(Murmur3_x86_32.hashInt(v, HashSeed), n)
      if (routes(p) < 0) { routes(p) = v; found += 1 }
      v += 1
    }
    routes
  }

  /**
   * After Spark inserts its exchanges (EnsureRequirements): every merging node over a shuffle of a
   * producer's rows by the keys gets packets instead. Run as a query stage preparation rule under adaptive
   * execution and before the columnar transitions without it; a plan with packets does not match again.
   */
  object Rule extends Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan =
      if (!SQLConf.get.getConfString(EnabledConf, "true").toBoolean) plan
      else plan.transformUp {
        case merging: GroupedAggregateExec if merging.mode != GroupedMode.Partial && merging.unpacks.isEmpty =>
          merging.child match {
            case shuffle: ShuffleExchangeExec if shuffle.shuffleOrigin == ENSURE_REQUIREMENTS =>
              (shuffle.outputPartitioning, shuffle.child) match {
                case (h: HashPartitioning, producer: GroupedAggregateExec)
                    if producer.mode != GroupedMode.Final && producer.packs.isEmpty &&
                      h.references.subsetOf(producer.outputSet) =>
                  val packing = StatePackets(
                    h.expressions,
                    h.numPartitions,
                    producer.output,
                    AttributeReference("route", IntegerType, nullable = false)(),
                    AttributeReference("packed_states", BinaryType, nullable = false)()
                  )
                  val packer = producer.copy(packs = Some(packing))
                  packer.copyTagsFrom(producer)
                  val packets = shuffle.copy(
                    outputPartitioning = HashPartitioning(Seq(packing.route), h.numPartitions),
                    child = packer,
                    advisoryPartitionSize = Some(advisoryBytes(SQLConf.get, shuffle.advisoryPartitionSize))
                  )
                  packets.copyTagsFrom(shuffle)
                  merging.copy(child = packets, unpacks = Some(packing))
                case _ => merging
              }
            case _ => merging
          }
      }
  }
}
