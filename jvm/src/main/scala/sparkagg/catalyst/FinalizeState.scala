package sparkagg.catalyst

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, NullType}
import sparkagg.api.{BindContext, FunctionDef}

/** `f_finalize(state [, parameters])`: the value one stored state evaluates to; NULL for a NULL state. */
case class FinalizeState(function: FunctionDef, sqlName: String, children: Seq[Expression], ctx: BindContext)
  extends Expression with CodegenFallback {

  @transient private lazy val invocation = Call.of(function, sqlName, Form.Finalize, children, ctx)
  // Read once: an eval per row must not unwrap the Either again.
  @transient private lazy val call: Call = invocation.toOption.get
  @transient private lazy val stateView = new RowValues

  override def checkInputDataTypes(): TypeCheckResult =
    invocation.flatMap(c => c.binding.left.map(c.explain)) match {
      case Left(why) => TypeCheckResult.TypeCheckFailure(why)
      case Right(_) => TypeCheckResult.TypeCheckSuccess
    }

  override def dataType: DataType = invocation.flatMap(_.binding).fold(_ => NullType, _.returnType)
  override def nullable: Boolean = true
  override def prettyName: String = sqlName

  override def eval(input: InternalRow): Any = {
    val state = children.head.eval(input)
    if (state == null) null
    else {
      val acc = call.newAccumulator()
      stateView.row = state.asInstanceOf[InternalRow]
      call.mergeGiven(acc, stateView)
      call.result(acc)
    }
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): FinalizeState =
    copy(children = newChildren)
}
