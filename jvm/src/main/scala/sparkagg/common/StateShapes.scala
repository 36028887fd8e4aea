package sparkagg.common

import org.apache.spark.sql.types._
import sparkagg.api._
import sparkagg.compat._

/**
 * From a state back to the call that made it: `_merge` and `_finalize` see only a state struct, and must
 * bind the function as it was bound for `_state`. The argument types are searched among the types the
 * state itself shows (and decimals of its scales), binding each candidate and keeping the one whose
 * state schema has the same names and types; where several fit (decimal precisions that all widen to
 * 38), the widest, whose result can hold any of theirs. `parameters` are the constant arguments a
 * function keeps outside its state (string_agg's delimiter), given again to `_merge` and `_finalize`.
 */
object StateShapes {
  private val common: Seq[DataType] = Seq(LongType, DoubleType, IntegerType, ShortType, ByteType, FloatType,
    BooleanType, StringType, BinaryType, DateType, TimestampType, TimestampNTZType)

  def argumentsFor(function: FunctionDef, state: StructType, ctx: BindContext,
      parameters: Seq[Arg] = Nil): Option[Seq[Arg]] =
    function.argumentsOf(state, parameters) match {
      case Some(args) => Some(args).filter(a => function.bind(a, ctx).exists(b => sameShape(b.stateSchema, state)))
      case None => search(function, state, ctx, parameters)
    }

  private def search(function: FunctionDef, state: StructType, ctx: BindContext,
      parameters: Seq[Arg]): Option[Seq[Arg]] = {
    val shown = state.fields.toSeq.flatMap(f =>
      f.dataType match {
        case ArrayType(element, _) => Seq(element, f.dataType)
        case other => Seq(other)
      }).distinct
    val decimals = shown.collect { case d: DecimalType => d.scale }.distinct
      .flatMap(s => (DecimalType.MAX_PRECISION to math.max(s, 1) by -1).map(p => DecimalType(p, s)))
    val single = (shown ++ decimals ++ common).distinct
    val pairs = for (a <- shown ++ Seq(DoubleType); b <- shown ++ Seq(DoubleType)) yield Seq(a, b)
    val candidates = single.map(Seq(_)) ++ Seq(Nil) ++ pairs
    candidates.iterator.map(types => types.map(Arg(_, nullable = true)) ++ parameters).filter { args =>
      function.bind(args, ctx).exists(b => sameShape(b.stateSchema, state))
    }.nextOption()
  }

  /** Same field names and types, nullability aside (a state read back from Parquet is all nullable). */
  def sameShape(a: DataType, b: DataType): Boolean = (a, b) match {
    case (x: StructType, y: StructType) =>
      x.length == y.length && x.fields.zip(y.fields).forall { case (f, g) =>
        f.name == g.name && sameShape(f.dataType, g.dataType)
      }
    case (ArrayType(x, _), ArrayType(y, _)) => sameShape(x, y)
    case (MapType(k1, v1, _), MapType(k2, v2, _)) => sameShape(k1, k2) && sameShape(v1, v2)
    case _ => a == b
  }
}
